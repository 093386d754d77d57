#!/usr/bin/env bash
# Everything this project measures on the H200, in one call of the device tool (run from the repo root):
#   bash tools/gpu_session.sh
# Two chains run side by side, one per GPU when the machine has two (nvidia-h200-x2), else one after
# the other: GPU 0 verifies every skill example; GPU 1 runs the gpu-marked tests, the timer-fidelity
# benchmark and `optimize --agent none` on the bundled naive SGEMM. Each step has a time limit and writes into /tmp/results, packed into $OUT/results.tgz
# after every step. Python runs from /tmp so that the checkout's skillbase/ does not shadow the install.
set -uo pipefail
repo=$PWD
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/results
source tools/device_setup.sh > /tmp/results/setup.log 2>&1 || { cat /tmp/results/setup.log; exit 1; }
export SKILLBASE_CACHE=/tmp/sbcache SKILLBASE_STORE=/tmp/results/store
gpus=$(nvidia-smi -L | wc -l)
{ date -u +%FT%TZ; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv,noheader; } > /tmp/results/device.txt
pack() { tar -C /tmp -czf "$OUT/results.tgz" results 2>/dev/null; }
run_step() {   # gpu name limit command...
  local gpu=$1 name=$2 limit=$3; shift 3
  echo "== [gpu $gpu] $name ($(date -u +%T), limit ${limit}s)"
  ( cd /tmp && CUDA_VISIBLE_DEVICES=$gpu timeout "$limit" "$@" ) > "/tmp/results/$name.log" 2>&1
  echo "rc=$?" >> "/tmp/results/$name.log"
  tail -n 3 "/tmp/results/$name.log"
  pack
}
echo "$gpus GPU(s)"
chain_a() {
  run_step 0 skills-verify "${VERIFY_LIMIT:-540}" skillbase skills verify ${VERIFY_IDS:-} --jobs 8 \
    --keep-profiles /tmp/results/population -o /tmp/results/skills-verify.md
}
chain_b() {
  local g=$(( gpus > 1 ? 1 : 0 ))
  run_step "$g" pytest-gpu 220 python3 -m pytest -m gpu -q --timeout 100 -p no:cacheprovider "$repo/tests"
  run_step "$g" fidelity 100 python3 "$repo/benchmarks/fidelity.py" --out /tmp/results/fidelity.md
  run_step "$g" optimize 180 skillbase optimize "$repo/examples/naive_sgemm/naive_sgemm.cu" --agent none --rounds 2
  run_step "$g" explain 20 skillbase explain run_1
  run_step "$g" report 30 skillbase report run_1 -o /tmp/results/report
}
if [ "$gpus" -gt 1 ]; then chain_a & chain_b & wait; else chain_a; chain_b; fi
pack
ls -la /tmp/results
