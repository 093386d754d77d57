#!/usr/bin/env bash
# Install the project on the GPU machine (no network there): the wheels the image lacks (.whl/, made
# here by ../shared/tools/device-wheels.sh, plus ncu-report), then skillbase itself, into /tmp/site.
# Usage (on the device, from the repo root): source tools/device_setup.sh
# Run Python from outside the checkout afterwards (or via the `skillbase` script): the checkout's
# skillbase/ folder would shadow the installed package, whose skillbase.engine maps to engine/.
# .whl/ also holds a setuptools >= 77 (the build's own requirement; the image's may be older), found
# first on PYTHONPATH by the build without isolation.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && PYTHONPATH=/tmp/site python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --upgrade --target /tmp/site . \
  || { echo "device setup failed"; return 1 2>/dev/null || exit 1; }
export PYTHONPATH=/tmp/site
# Without the ncu_report wheel (17 MB: leave it out to make room in a trip, e.g. for the Ray wheel), the
# module Nsight Compute ships beside ncu reads the reports as well.
if ! python3 -c "import ncu_report" 2>/dev/null; then
  for extras in /opt/nvidia/nsight-compute/*/extras/python /usr/local/cuda/nsight-compute*/extras/python; do
    [ -f "$extras/ncu_report.py" ] && PYTHONPATH=$PYTHONPATH:$extras
  done
fi
export PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH
(cd /tmp && python3 -c "import skillbase, skillbase.engine, ncu_report, rule_engine, tree_sitter_cuda, jsonschema, cupy; print('skillbase importable; cupy', cupy.__version__)")
