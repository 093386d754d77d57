#!/usr/bin/env bash
# The harness's GPU session, for the H200: gpu-marked tests, then the timer-fidelity benchmark.
# Installs nothing. Prerequisites on that machine (docs: /work/shared/GPU.md):
#   - the project's missing wheels importable (e.g. PYTHONPATH=/tmp/site after
#     `python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl`);
#   - nvcc, ncu and compute-sanitizer on PATH (/usr/local/cuda/bin), CuPy (cupy-cuda13x) importable.
# Usage: OUT=/some/folder bash tests/gpu_session.sh      (logs and fidelity.md land in $OUT)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export SKILLBASE_CACHE=${SKILLBASE_CACHE:-$OUT/cache}
status=0

{
  echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader)"
  python3 -c "import cupy, numpy, jsonschema, tree_sitter_cuda, yaml; print('imports ok: cupy', cupy.__version__)"
} 2>&1 | tee "$OUT/environment.log"
if ! python3 -c "import cupy, jsonschema, tree_sitter_cuda" 2>/dev/null; then
  echo "missing Python packages (see environment.log): install the .whl wheels first" | tee -a "$OUT/environment.log"
  exit 2
fi

python3 -m skillbase doctor 2>&1 | tee "$OUT/doctor.log" || status=1

# Fast first: the harness's own GPU tests; -x stops at the first failure so its log is short.
python3 -m pytest -m gpu -q -x --timeout 300 -p no:cacheprovider \
  tests/test_cheats.py tests/test_doctor.py 2>&1 | tee "$OUT/pytest-gpu-harness.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

# Every other gpu-marked test in the repository (other parts' GPU tests), not stopping early.
python3 -m pytest -m gpu -q --timeout 300 -p no:cacheprovider tests/ \
  --ignore=tests/test_cheats.py --ignore=tests/test_doctor.py 2>&1 | tee "$OUT/pytest-gpu-all.log"
rc=${PIPESTATUS[0]}; [ "$rc" -eq 0 ] || [ "$rc" -eq 5 ] || status=1

# A human-readable check of both bundled tasks (tables in the log).
for k in examples/vector_add/vector_add.cu examples/naive_sgemm/naive_sgemm.cu; do
  python3 -m skillbase check "$k" 2>&1 | tee -a "$OUT/check.log" || status=1
done

python3 benchmarks/fidelity.py --out "$OUT/fidelity.md" 2>&1 | tee "$OUT/fidelity.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

echo "== done, status $status; logs in $OUT"
exit $status
