#!/usr/bin/env bash
# Session 19, call 1 (main). Four jobs side by side on the one H200 (timed phases and ncu runs take the GPU's
# exclusive lock under one SKILLBASE_CACHE):
#   - the GPU tests of the allocation-probe fix (issue 16, "no honest kernel misjudged"): honest kernels beside
#     processes that take device memory, a leaking launcher beside the same, and the planted cheats;
#   - LLM trip 17 (issue 16): the 18 answers waiting (results/.../answers-waiting.tar.gz over the committed store);
#   - KernelBench trip 9 (issue 20): first kernels of unjudged problems (trip/kb_answers.tar.gz, carried);
#   - torch.compile FP32 at preset l (issue 17) on the 17 operators never run and the 3 the probe misjudged.
# Back in $OUT (at most 8 files): llm-store.tar.gz(.part-*), kb-store.tar.gz, bench-results.json, logs.tar.gz.
set -uo pipefail
R=$PWD; O=$OUT; T0=$SECONDS; BUDGET=${BUDGET:-560}
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
( cd /tmp && timeout -k 5 $((left - 60)) python3 -m pytest -v -rA -p no:cacheprovider -m gpu --durations=0 \
  $R/tests/harness/test_allocation_probe.py $R/tests/harness/test_cheats.py ) > $L/gpu-tests.log 2>&1 &
SETUP=skip OUT=/tmp/o1 STEP=resume LIMIT=$((left - 130)) WORKERS=2 bash tools/llm_bench_trip.sh > $L/llm.out 2>&1 &
SETUP=skip OUT=/tmp/o2 STEP=resume ANSWERS=trip/kb_answers.tar.gz LIMIT=$((left - 130)) WORKERS=2 \
  bash tools/kernelbench_trip.sh > $L/kb.out 2>&1 &
(
  source bench/tools/cudnn_env.sh > $L/cudnn_env.log 2>&1
  export SKILLBASE_BENCH_DIR=$R/bench
  mkdir -p /tmp/vres && cp -r results/nvidia-h200 /tmp/vres/
  cd /tmp && timeout -k 5 $((left - 60)) skillbase bench run --results /tmp/vres --workers-per-gpu 2 \
    --impl torch_compile --dtype fp32 --preset l --ops "$OPS" 2>&1 \
    | while IFS= read -r line; do echo "$((SECONDS-T0))s $line"; done > $L/torch-compile-fp32.log
  cp /tmp/vres/nvidia-h200/bench/results.json $O/bench-results.json
) &
wait
echo "all done $((SECONDS-T0)) s"
for f in /tmp/o1/store.tar.gz*; do cp "$f" "$O/llm-$(basename "$f")"; done
cp /tmp/o2/store.tar.gz $O/kb-store.tar.gz
mkdir -p $L/llm $L/kb; cp /tmp/o1/trip.log /tmp/o1/device.txt $L/llm/; cp /tmp/o2/trip.log $L/kb/
grep -E "(passed|failed|error)" $L/gpu-tests.log | tail -3
tail -3 $L/llm/trip.log $L/kb/trip.log; tail -2 $L/torch-compile-fp32.log
echo "total $((SECONDS-T0)) s"
