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
# Each module in its own interpreter, one line each: one combined import segfaulted on the H200 with
# ncu_report from Nsight Compute's extras/python (`import ray, ncu_report` alone worked), and a crash
# must name the module that crashed, not hide the others. From /tmp: the checkout would shadow skillbase.
# The status (what `source ... ||` sees) is non-zero when any module does not import.
(
  failed=""
  for module in skillbase skillbase.engine ncu_report rule_engine tree_sitter_cuda jsonschema cupy; do
    said=$(cd /tmp && python3 -c "import importlib, sys; m = importlib.import_module(sys.argv[1]); \
print(getattr(m, '__version__', '-'), getattr(m, '__file__', '') or '')" "$module" 2>&1)
    status=$?
    if [ "$status" -eq 0 ]; then
      printf 'import %-16s ok      %s\n' "$module" "$(printf '%s\n' "$said" | tail -n 1)"
    else
      if [ "$status" -gt 128 ]; then why="killed by SIG$(kill -l $((status - 128)))"; else why="exit $status:"; fi
      printf 'import %-16s FAILED  %s %s\n' "$module" "$why" "$(printf '%s\n' "$said" | tail -n 1)"
      failed="$failed $module"
    fi
  done
  if [ -n "$failed" ]; then echo "device setup: not importable:$failed"; exit 1; fi
  echo "device setup: every module imports"
)
