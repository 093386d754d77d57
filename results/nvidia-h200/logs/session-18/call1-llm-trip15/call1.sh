#!/usr/bin/env bash
# Session 18, call 1 (main): the two-workers GPU test (its CLI fixture fixed in session 16, not run since), then
# LLM trip 15 (25 answers, packed here from the committed store and answers, judged, 13 reopened runs profiled to their next prompt) with the time left, on two
# workers per GPU only when that test passed. Logs into $OUT/logs.tar.gz, the store into $OUT/store.tar.gz(.part-*).
set -uo pipefail
R=$PWD; O=$OUT; T0=$SECONDS; BUDGET=${BUDGET:-560}
L=/tmp/logs; mkdir -p $L
pack() { tar -czf $O/logs.tar.gz -C /tmp logs; }
trap pack EXIT
source tools/device_setup.sh > $L/setup.log 2>&1 || { tail -20 $L/setup.log; exit 1; }
echo "setup $((SECONDS-T0)) s"
# The coders' archive, made here from the two committed files (carrying trip/answers.tar.gz would pass the
# device tool's 64 MiB): the reopened store and the 25 answers written in session 17.
RUN=$R/results/nvidia-h200/optimize/llm-run-2026-12-02
mkdir -p trip && ( cd /tmp && skillbase store unpack $RUN/store.tar.gz --store /tmp/prep --force \
  && tar -xzf $RUN/answers-waiting.tar.gz -C /tmp/prep \
  && skillbase store pack $R/trip/answers.tar.gz --store /tmp/prep --without-reports --force ) > $L/prep.log 2>&1 \
  || { cat $L/prep.log; exit 1; }
echo "answers packed $((SECONDS-T0)) s"
( cd /tmp && timeout -k 5 110 python3 -m pytest -v -rA -p no:cacheprovider -m gpu --durations=0 \
  $R/tests/harness/test_workers_per_gpu.py ) > $L/workers-gpu.log 2>&1
rc_w=$?; echo "workers-gpu rc=$rc_w at $((SECONDS-T0))s: $(grep -E '(passed|failed|error)' $L/workers-gpu.log | tail -1)"
left=$((BUDGET - (SECONDS-T0) - 25))
W=1; [ "$rc_w" = 0 ] && W=2
SETUP=skip OUT=/tmp/o1 STEP=resume LIMIT=$((left - 35)) WORKERS=$W bash tools/llm_bench_trip.sh
cp /tmp/o1/store.tar.gz* $O/ 2>/dev/null; cp /tmp/o1/trip.log /tmp/o1/device.txt $L/ 2>/dev/null
echo "total $((SECONDS-T0)) s"
