#!/usr/bin/env bash
# Issue 21's comparison on the GPU machine inside one device call (repo root there; docs/ray.md): the FP32
# baselines of OPS at PRESET through the local executor, then through Ray, each pass under its own time
# limit so that both fit one call, then the Ray GPU test (from /tmp: the checkout would shadow the package).
# Carry .whl holding the trimmed Ray wheel (tools/ray_wheel_for_device.py) and without ncu_report's wheel
# (the carry limit; tools/device_setup.sh falls back to Nsight Compute's own module).
#   OPS=relu,gelu PRESET=s bash tools/ray_trip.sh
# Settings: OPS (comma-separated or `all`), PRESET (s), LOCAL_S and RAY_S (each pass's limit, 270 and 240 s),
# TEST_S (300). What comes back in $OUT: local.json, ray.json (each pass's record, written when it ends),
# local.log, ray.log, test_batch_ray_gpu.log, setup.log, device.txt.
set -uo pipefail
OPS=${OPS:?OPS=all or op,op,...} PRESET=${PRESET:-s}
LOCAL_S=${LOCAL_S:-270} RAY_S=${RAY_S:-240} TEST_S=${TEST_S:-300}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 tools/ray_wheel_for_device.py --unpack > "$OUT/unpack.log" 2>&1 || { cat "$OUT/unpack.log"; exit 1; }
source tools/device_setup.sh > "$OUT/setup.log" 2>&1
tail -n 3 "$OUT/setup.log"
export PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  nvcc --version | tail -1; } > "$OUT/device.txt" 2>&1
repo=$PWD
one_pass() {   # executor limit
  ( cd /tmp && timeout -k 5 "$2" python3 "$repo/tools/measure/ray_vs_local.py" --ops "$OPS" --preset "$PRESET" \
      --executors "$1" --out "$OUT" ) > "$OUT/$1.log" 2>&1
  echo "$1 pass: exit $?; $(grep -E 'executor: [0-9]+ results' "$OUT/$1.log" || echo 'no summary line')"
}
one_pass local "$LOCAL_S"
one_pass ray "$RAY_S"
( cd /tmp && timeout -k 5 "$TEST_S" python3 -m pytest -m gpu -q -rA -p no:cacheprovider \
    "$repo/tests/run/test_batch_ray_gpu.py" ) > "$OUT/test_batch_ray_gpu.log" 2>&1
echo "test_batch_ray_gpu: exit $?; $(tail -n 1 "$OUT/test_batch_ray_gpu.log")"
