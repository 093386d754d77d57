#!/usr/bin/env bash
# Session 18, call 4 (main, with the allocating-launcher probe fix of verify.py): LLM trip 17 in the last ~300 s
# of device time: the 5 answers that came after trip 16 left, and the 3 answers trip 16 failed as "launcher
# allocates device memory" while a PyTorch bench and a KernelBench trip shared the GPU, resubmitted unchanged.
set -uo pipefail
R=$PWD; O=$OUT; T0=$SECONDS; BUDGET=${BUDGET:-150}
L=/tmp/logs; mkdir -p $L
pack() { tar -czf $O/logs.tar.gz -C /tmp logs; }
trap pack EXIT
source tools/device_setup.sh > $L/setup.log 2>&1 || { tail -20 $L/setup.log; exit 1; }
RUN=$R/results/nvidia-h200/optimize/llm-run-2026-12-02
mkdir -p trip && ( cd /tmp && skillbase store unpack $RUN/store.tar.gz --store /tmp/prep --force \
  && tar -xzf $RUN/answers-waiting.tar.gz -C /tmp/prep \
  && skillbase store pack $R/trip/answers.tar.gz --store /tmp/prep --without-reports --force ) > $L/prep.log 2>&1 \
  || { cat $L/prep.log; exit 1; }
echo "answers packed $((SECONDS-T0)) s"
left=$((BUDGET - (SECONDS-T0)))
SETUP=skip OUT=/tmp/o1 STEP=resume LIMIT=$((left - 60)) WORKERS=2 bash tools/llm_bench_trip.sh
cp /tmp/o1/store.tar.gz* $O/ 2>/dev/null; cp /tmp/o1/trip.log /tmp/o1/device.txt $L/ 2>/dev/null
echo "total $((SECONDS-T0)) s"
