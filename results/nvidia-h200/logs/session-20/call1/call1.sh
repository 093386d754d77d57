#!/usr/bin/env bash
# Session 20, call 1 (main). Four jobs side by side on the one H200 (timed phases and ncu runs take the GPU's
# exclusive lock under one SKILLBASE_CACHE):
#   - the GPU tests of the allocating-launcher verdict from CUPTI's API callbacks (issue 16, owed since session 19):
#     honest kernels and a leaking launcher beside processes that take and free memory, the CUPTI timer, the cheats;
#   - LLM trip 19 (issue 16): the 22 answers waiting and the 12 interrupted runs' profiles (trip/answers.tar.gz,
#     made here from the committed store and answers-waiting.tar.gz: the two would not fit the carry limit);
#   - KernelBench trip 11 (issue 20): level-2 first kernels and three level-1 ones (trip/kb_answers.tar.gz, carried).
# Back in $OUT: llm-store.tar.gz(.part-*), kb-store.tar.gz, logs.tar.gz.
set -uo pipefail
R=$PWD; O=$OUT; T0=$SECONDS; BUDGET=${BUDGET:-540}
L=/tmp/logs; rm -rf $L /tmp/o1 /tmp/o2; mkdir -p $L
export SKILLBASE_CACHE=/tmp/sbcache
pack() { tar -czf $O/logs.tar.gz -C /tmp logs; }
trap pack EXIT
source tools/device_setup.sh > $L/setup.log 2>&1 || { tail -20 $L/setup.log; exit 1; }
echo "setup $((SECONDS-T0)) s"
RUN=$R/results/nvidia-h200/optimize/llm-run-2026-12-02
mkdir -p trip && ( cd /tmp && skillbase store unpack $RUN/store.tar.gz --store /tmp/prep --force \
  && tar -xzf $RUN/answers-waiting.tar.gz -C /tmp/prep \
  && skillbase pending --store /tmp/prep \
  && skillbase store pack $R/trip/answers.tar.gz --store /tmp/prep --without-reports --force ) > $L/prep.log 2>&1 \
  || { cat $L/prep.log; exit 1; }
echo "answers packed $((SECONDS-T0)) s"
left=$((BUDGET - (SECONDS-T0)))
( cd /tmp && timeout -k 5 $((left - 40)) python3 -m pytest -v -rA -p no:cacheprovider -m gpu --durations=0 \
  $R/tests/harness/test_allocation_probe.py $R/tests/harness/test_timing_cupti.py ) > $L/gpu-tests-alloc.log 2>&1 &
( cd /tmp && timeout -k 5 $((left - 40)) python3 -m pytest -v -rA -p no:cacheprovider -m gpu --durations=0 \
  $R/tests/harness/test_cheats.py ) > $L/gpu-tests-cheats.log 2>&1 &
SETUP=skip OUT=/tmp/o1 STEP=resume LIMIT=$((left - 100)) WORKERS=2 bash tools/llm_bench_trip.sh > $L/llm.out 2>&1 &
SETUP=skip OUT=/tmp/o2 STEP=resume ANSWERS=trip/kb_answers.tar.gz LIMIT=$((left - 100)) WORKERS=2 \
  bash tools/kernelbench_trip.sh > $L/kb.out 2>&1 &
wait
echo "all done $((SECONDS-T0)) s"
for f in /tmp/o1/store.tar.gz*; do cp "$f" "$O/llm-$(basename "$f")"; done
cp /tmp/o2/store.tar.gz $O/kb-store.tar.gz
mkdir -p $L/llm $L/kb; cp /tmp/o1/trip.log /tmp/o1/device.txt $L/llm/; cp /tmp/o2/trip.log $L/kb/
grep -hE "(passed|failed|error)" $L/gpu-tests-*.log | tail -4; grep -h "allocat" $L/gpu-tests-alloc.log | cut -c1-300 | tail -6
tail -3 $L/llm/trip.log $L/kb/trip.log
echo "total $((SECONDS-T0)) s"
