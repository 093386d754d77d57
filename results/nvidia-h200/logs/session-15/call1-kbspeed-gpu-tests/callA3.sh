#!/usr/bin/env bash
# Session 15, call A3: run with main + kb-speed merged checked out, trip/main.tar.gz = `git archive main` (the
# control). H68's plan: the failing CUPTI test alone (twice, -x -v so pytest says why), after the CuPy tests, the
# margins it compares, the three-checks test with durations, the KernelBench GPU tests never reached; the same
# CUPTI test on main as the control; H70's two-workers GPU test. Then a KB trip with whatever time is left (two
# workers on the GPU when H70's test passed).
set -uo pipefail
R=$PWD; O=$OUT; T0=$SECONDS; BUDGET=${BUDGET:-570}
source tools/device_setup.sh > $O/setup.log 2>&1 || { tail -20 $O/setup.log; exit 1; }
mkdir -p /tmp/main && tar -xzf trip/main.tar.gz -C /tmp/main && python3 -m pip install -q --no-index --no-deps \
  --no-build-isolation --no-compile --target /tmp/site_main /tmp/main > $O/setup-main.log 2>&1
echo "setup $((SECONDS-T0)) s"
T38=tests/harness/test_timing_cupti.py::test_cupti_times_the_kernels_between_the_bandwidth_floor_and_the_events
T42=tests/harness/test_timing_cupti.py::test_three_checks_at_once_misjudge_nothing_and_still_catch_the_side_stream
P="python3 -m pytest -x -v -rA -p no:cacheprovider"
t() {  # t NAME LIMIT DIR PYTHONPATH "OPTIONS" TESTS... : one pytest run of DIR's TESTS from /tmp, its own log
  local name=$1 limit=$2 dir=$3 pp=$4 opts=$5; shift 5
  ( cd /tmp && PYTHONPATH=$pp timeout -k 5 $limit $P $opts "${@/#/$dir/}" ) > $O/$name.log 2>&1
  local rc=$?; eval "rc_${name//-/_}=$rc"
  echo "$name rc=$rc at $((SECONDS-T0))s: $(grep -E '(passed|failed|error)' $O/$name.log | tail -1)"
}
t t38-a 60 $R $PYTHONPATH "" $T38
t t38-b 60 $R $PYTHONPATH "" $T38
t t38-main 60 /tmp/main /tmp/site_main:$PYTHONPATH "" $T38
t t38-after-cupy 120 $R $PYTHONPATH "-m gpu" tests/harness/test_scramble.py \
  tests/harness/test_reference_on_device.py::test_a_scan_of_device_memory_does_not_find_the_kept_reference $T38
( cd /tmp && timeout 90 python3 $R/trip/margins.py $R ) > $O/margins.log 2>&1; echo "margins rc=$?"
( cd /tmp && PYTHONPATH=/tmp/site_main:$PYTHONPATH timeout 90 python3 $R/trip/margins.py /tmp/main ) > $O/margins-main.log 2>&1
t t42 150 $R $PYTHONPATH "--durations=0" $T42
t kernelbench-gpu 200 $R $PYTHONPATH "-m gpu" tests/kernelbench/
# H70 (2f2793b): two workers on one GPU, exclusive sections never overlapping
t workers-gpu 120 $R $PYTHONPATH "-m gpu" tests/harness/test_workers_per_gpu.py tests/run/test_prebuild.py
left=$((BUDGET - (SECONDS-T0) - 40))
# the KB trip runs on the branch only when its KernelBench GPU tests passed
if [ "$left" -gt 90 ] && [ "${rc_kernelbench_gpu:-1}" = 0 ]; then
  export SETUP=skip
  W=1; [ "${rc_workers_gpu:-1}" = 0 ] && W=2
  WORKERS=$W OUT=/tmp/o2 STEP=resume ANSWERS=trip/kb_answers4.tar.gz LIMIT=$((left - 60)) bash tools/kernelbench_trip.sh
  for f in /tmp/o2/*; do cp $f $O/kb-$(basename $f); done
fi
echo "total $((SECONDS-T0)) s"
