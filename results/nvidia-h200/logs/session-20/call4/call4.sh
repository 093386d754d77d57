#!/usr/bin/env bash
# Session 20, call 4 (main), on the 270 s of device time left after call 3 was lost: the GPU test of the chunked
# output comparison (H88: CuPy agrees with numpy; a 1.6e9-element compare within its memory bound) beside a short
# KernelBench trip on the level-1 activation first kernels (6.4 GB outputs, which ran the harness out of memory in
# call 1). Back in $OUT: kb-store.tar.gz, logs.tar.gz.
set -uo pipefail
R=$PWD; O=$OUT; T0=$SECONDS
L=/tmp/logs; rm -rf $L /tmp/o2; mkdir -p $L
export SKILLBASE_CACHE=/tmp/sbcache
pack() { tar -czf $O/logs.tar.gz -C /tmp logs; }
trap pack EXIT
source tools/device_setup.sh > $L/setup.log 2>&1 || { tail -20 $L/setup.log; exit 1; }
echo "setup $((SECONDS-T0)) s"
( cd /tmp && timeout -k 5 120 python3 -m pytest -v -rA -s -p no:cacheprovider -m gpu --durations=0 \
  $R/tests/harness/test_compare_chunked.py ) > $L/gpu-tests-compare.log 2>&1 &
P1=$!
SETUP=skip OUT=/tmp/o2 STEP=resume ANSWERS=trip/kb_answers.tar.gz LIMIT=${LIMIT:-65} WORKERS=2 \
  bash tools/kernelbench_trip.sh > $L/kb.out 2>&1 &
P2=$!
( while sleep 10; do nvidia-smi --query-gpu=memory.used --format=csv,noheader; done ) > $L/gpu-memory.log 2>&1 &
MON=$!
wait $P1 $P2
kill $MON 2>/dev/null
echo "all done $((SECONDS-T0)) s"
cp /tmp/o2/store.tar.gz $O/kb-store.tar.gz
mkdir -p $L/kb; cp /tmp/o2/trip.log $L/kb/
grep -hE "(passed|failed|error)" $L/gpu-tests-compare.log | tail -2; grep -h "pool grew" $L/gpu-tests-compare.log
sort -n $L/gpu-memory.log | tail -1; grep -E '"reason"' $L/kb/trip.log | grep -v missing | cut -c1-220 | head
echo "total $((SECONDS-T0)) s"
