#!/usr/bin/env bash
# Session 16, call A4 (main checked out): the GPU tests of what changed since the last GPU run (the CUPTI ceiling
# test now comparing one launch per sample with one, H72's gpu_wait phase, H71's written_aside, H70's two workers
# per GPU whose GPU test failed in session 15 with its log lost), then LLM trip 14 with what time is left
# (WORKERS=2 only when the two-workers test passed). Every log goes into ONE file, $OUT/logs.tar.gz (the device
# returns at most 8 files: session 15 lost three logs).
set -uo pipefail
R=$PWD; O=$OUT; T0=$SECONDS; BUDGET=${BUDGET:-570}
L=/tmp/logs; mkdir -p $L
pack() { tar -czf $O/logs.tar.gz -C /tmp logs; }
trap pack EXIT
source tools/device_setup.sh > $L/setup.log 2>&1 || { tail -20 $L/setup.log; exit 1; }
echo "setup $((SECONDS-T0)) s"
P="python3 -m pytest -v -rA -p no:cacheprovider"
t() {  # t NAME LIMIT "OPTIONS" TESTS... : one pytest run from /tmp, its own log
  local name=$1 limit=$2 opts=$3; shift 3
  ( cd /tmp && timeout -k 5 $limit $P $opts "${@/#/$R/}" ) > $L/$name.log 2>&1
  local rc=$?; eval "rc_${name//-/_}=$rc"
  echo "$name rc=$rc at $((SECONDS-T0))s: $(grep -E '(passed|failed|error)' $L/$name.log | tail -1)"
  grep -E "^(FAILED|ERROR) " $L/$name.log | head -5
}
t cupti-gpu 150 "-m gpu --durations=0" tests/harness/test_timing_cupti.py
t workers-gpu 150 "-m gpu --durations=0" tests/harness/test_workers_per_gpu.py tests/run/test_prebuild.py
t lock-gpu 90 "-m gpu" tests/harness/test_gpu_lock.py tests/run/test_job_time.py tests/test_files.py
left=$((BUDGET - (SECONDS-T0) - 30))
if [ "$left" -gt 150 ]; then
  W=1; [ "${rc_workers_gpu:-1}" = 0 ] && W=2
  SETUP=skip OUT=/tmp/o1 STEP=resume LIMIT=$((left - 40)) WORKERS=$W bash tools/llm_bench_trip.sh
  cp /tmp/o1/store.tar.gz* $O/ 2>/dev/null; cp /tmp/o1/trip.log /tmp/o1/device.txt $L/ 2>/dev/null
fi
echo "total $((SECONDS-T0)) s"
