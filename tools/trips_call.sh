#!/usr/bin/env bash
# One device call that runs, side by side on the GPU machine (repo root there), what a session's calls have run
# since session 18: GPU tests, an LLM bench trip (issue 16) and a KernelBench trip (issue 20), each cut to the
# call's BUDGET, with nvidia-smi's memory use every 20 s. Instead of a new near-copy of the last call's script:
#   BUDGET=560 GPU_TESTS="tests/harness/test_compare_chunked.py" LLM=1 KB=1 bash tools/trips_call.sh
# Settings (environment):
#   BUDGET     seconds the whole call may take, setup included (default 540; the device allows 600)
#   GPU_TESTS  space-separated test files run with `pytest -m gpu`, one after another (default none); each gets
#              at most TEST_LIMIT seconds (default: the time left less 40 s)
#   LLM=1      LLM trip: `STEP=resume FROM=$RUN tools/llm_bench_trip.sh`, which unpacks on the machine RUN's
#              committed store.tar.gz with its answers-waiting.tar.gz laid over it (default RUN:
#              results/nvidia-h200/optimize/llm-run-2026-12-02; the two do not fit the 64 MiB carry beside the
#              checkout)
#   KB=1       KernelBench trip: `STEP=$KB_STEP ANSWERS=trip/kb_answers.tar.gz tools/kernelbench_trip.sh`
#              (carry trip/kb_answers.tar.gz; KB_ANSWERS= names another archive); KB_STEP resume (default) judges
#              the answers, baselines times what the members' PyTorch times lack, baselines+resume does both
#              (BASELINES_SHARE % of the time for the first, default 50; RETRY_FAILED=1 retimes a failed compile;
#              BASELINES_PROBLEMS="level1/14 level2/3" times only those members)
#   CUPTI=1    first, alone on the GPU (it measures the timer): `tools/measure/cupti_overhead.py` with its
#              default kernels and ncu, bounded to CUPTI_S seconds (default 240); back in $OUT/cupti/
#   EXPECT_GPU the GPU name (nvidia-smi's) the trip's runs were timed on: on another, the call stops before setup
#   WORKERS    worker processes per GPU for both trips (default 2; 1 for problems of many GB, which two workers
#              and a GPU test can run out of device memory)
# Carry .whl (the install) and, for KB=1, trip/kb_answers.tar.gz. Back in $OUT: llm-store.tar.gz(.part-*),
# kb-store.tar.gz, logs.tar.gz (setup, each test's log, both trips' trip.log, gpu-memory.log).
set -uo pipefail
R=$PWD; O=${OUT:?run through the device tool, which sets OUT}; T0=$SECONDS
BUDGET=${BUDGET:-540} GPU_TESTS=${GPU_TESTS:-} LLM=${LLM:-0} KB=${KB:-0} WORKERS=${WORKERS:-2}
KB_STEP=${KB_STEP:-resume} CUPTI=${CUPTI:-0} CUPTI_S=${CUPTI_S:-240}
case $KB_STEP in resume|baselines|baselines+resume) ;; *) echo "KB_STEP is resume, baselines or baselines+resume"; exit 2 ;; esac
RUN=$(realpath -m "${RUN:-results/nvidia-h200/optimize/llm-run-2026-12-02}")
W=${WORK:-/tmp}   # scratch: logs, the trips' OUT folders and stores (WORK=DIR: the CPU test's own)
L=$W/logs; rm -rf $L $W/o1 $W/o2; mkdir -p $L
export SKILLBASE_CACHE=${SKILLBASE_CACHE:-/tmp/sbcache}
trap 'tar -czf $O/logs.tar.gz -C $W logs' EXIT
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); echo "gpu: ${GPU:-none}"
# before setup: `resume` refuses a run timed on another GPU model, so such a machine would only cost time
if [ -n "${EXPECT_GPU:-}" ] && [ "$GPU" != "$EXPECT_GPU" ]; then echo "not $EXPECT_GPU: nothing run"; exit 3; fi
if [ "${SETUP:-}" != skip ]; then   # SETUP=skip: skillbase already on PATH (a warm machine, the CPU test)
  source tools/device_setup.sh > $L/setup.log 2>&1 || { tail -20 $L/setup.log; exit 1; }
fi
echo "setup $((SECONDS-T0)) s"
if [ "$CUPTI" = 1 ]; then   # before anything else runs: a neighbour on the GPU would be in its figures
  python3 tools/measure/cupti_overhead.py --out $O/cupti --budget-s $CUPTI_S > $L/cupti.log 2>&1
  echo "cupti_overhead rc=$? $((SECONDS-T0)) s"
fi
left=$((BUDGET - (SECONDS-T0)))
pids=()
if [ -n "$GPU_TESTS" ]; then
  ( cd /tmp && for t in $GPU_TESTS; do
      timeout -k 5 ${TEST_LIMIT:-$((left - 40))} python3 -m pytest -v -rA -s -p no:cacheprovider -m gpu \
        --durations=0 $R/$t > $L/gpu-tests-$(basename $t .py).log 2>&1
    done ) &
  pids+=($!)
fi
if [ "$LLM" = 1 ]; then
  SETUP=skip OUT=$W/o1 STEP=resume FROM=$RUN ANSWERS=$W/llm-answers.tar.gz STORE=$W/store \
    LIMIT=$((left - 60)) WORKERS=$WORKERS bash tools/llm_bench_trip.sh > $L/llm.out 2>&1 &
  pids+=($!)
fi
if [ "$KB" = 1 ]; then
  SETUP=skip OUT=$W/o2 STEP=$KB_STEP ANSWERS=${KB_ANSWERS:-trip/kb_answers.tar.gz} STORE=$W/kbstore \
    LIMIT=$((left - 70)) WORKERS=$WORKERS \
    bash tools/kernelbench_trip.sh > $L/kb.out 2>&1 &
  pids+=($!)
fi
( while sleep 20; do nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader; done ) \
  > $L/gpu-memory.log 2>&1 &
MON=$!
[ ${#pids[@]} -gt 0 ] && wait "${pids[@]}"
kill $MON 2>/dev/null
echo "all done $((SECONDS-T0)) s"
if [ "$LLM" = 1 ]; then
  for f in $W/o1/store.tar.gz*; do cp "$f" "$O/llm-$(basename "$f")"; done
  mkdir -p $L/llm; cp $W/o1/trip.log $W/o1/device.txt $L/llm/
fi
if [ "$KB" = 1 ]; then
  cp $W/o2/store.tar.gz $O/kb-store.tar.gz; mkdir -p $L/kb; cp $W/o2/trip.log $L/kb/
fi
[ -n "$GPU_TESTS" ] && grep -hE "^=+ .*(passed|failed|error)" $L/gpu-tests-*.log
sort -n $L/gpu-memory.log | tail -1
for f in $L/llm/trip.log $L/kb/trip.log; do [ -f $f ] && tail -n 3 $f; done
echo "total $((SECONDS-T0)) s"
