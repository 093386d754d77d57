#!/usr/bin/env bash
# Session 16, call B4 (kb-speed checked out, main merged in): kb-speed's GPU tests that session 15 could not finish
# (tests/kernelbench's GPU tests were cut at 200 s inside test_a_correct_kernel_passes_and_a_wrong_one_is_rejected,
# the three-checks CUPTI test failed with its log lost), each test with its own time limit so a hang names itself;
# then a KernelBench trip only when every KernelBench GPU test passed. All logs in ONE file, $OUT/logs.tar.gz.
set -uo pipefail
R=$PWD; O=$OUT; T0=$SECONDS; BUDGET=${BUDGET:-570}
L=/tmp/logs; mkdir -p $L
pack() { tar -czf $O/logs.tar.gz -C /tmp logs; }
trap pack EXIT
source tools/device_setup.sh > $L/setup.log 2>&1 || { tail -20 $L/setup.log; exit 1; }
echo "setup $((SECONDS-T0)) s"
P="python3 -m pytest -v -rA -p no:cacheprovider --durations=0"
kb_ok=0
t() {  # t NAME LIMIT TEST : one pytest run from /tmp, its own log
  local name=$1 limit=$2; shift 2
  ( cd /tmp && timeout -k 5 $limit $P -m gpu "${@/#/$R/}" ) > $L/$name.log 2>&1
  local rc=$?; [ $rc = 0 ] || kb_ok=1
  echo "$name rc=$rc at $((SECONDS-T0))s: $(grep -E '(passed|failed|error)' $L/$name.log | tail -1)"
  grep -E "^(FAILED|ERROR) " $L/$name.log | head -5
}
t cupti 150 tests/harness/test_timing_cupti.py
for f in $(cd $R && ls tests/kernelbench/test_*.py); do
  grep -q "mark.gpu\|pytestmark.*gpu" $R/$f || continue
  t kb-$(basename $f .py) 240 $f
done
left=$((BUDGET - (SECONDS-T0) - 40))
if [ "$left" -gt 90 ] && [ $kb_ok = 0 ]; then
  SETUP=skip OUT=/tmp/o2 STEP=resume ANSWERS=trip/kb_answers4.tar.gz LIMIT=$((left - 60)) WORKERS=${WORKERS:-1} \
    bash tools/kernelbench_trip.sh
  for f in /tmp/o2/*; do case $f in *.tar.gz*) cp $f $O/;; *) cp $f $L/;; esac; done
fi
echo "total $((SECONDS-T0)) s"
