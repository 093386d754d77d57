#!/usr/bin/env bash
# Session 21, call 4 (main), on the ~270 s of device time left: tools/measure/cupti_overhead.py, never run before,
# alone on the H200: does starting CUPTI lengthen vector_add's ~60 us kernel, or do the two worker processes of
# the ceiling test differ in something else? (test_timing_cupti's ceiling test has failed by +1.5-3.3 % since
# session 15 and is recorded as an expected failure with its figures.) Back in $OUT: cupti/, logs.tar.gz.
set -uo pipefail
T0=$SECONDS; L=/tmp/logs; rm -rf $L; mkdir -p $L $OUT/cupti
export SKILLBASE_CACHE=/tmp/sbcache
trap 'tar -czf $OUT/logs.tar.gz -C /tmp logs' EXIT
source tools/device_setup.sh > $L/setup.log 2>&1 || { tail -20 $L/setup.log; exit 1; }
echo "setup $((SECONDS-T0)) s"
timeout -k 5 ${BUDGET:-130} python tools/measure/cupti_overhead.py --out $OUT/cupti --kernels vector_add:default \
  --cycles 6 --no-ncu --budget-s $(( ${BUDGET:-130} - 20 )) 2>&1 | tee $L/cupti.log | tail -40
echo "total $((SECONDS-T0)) s"
