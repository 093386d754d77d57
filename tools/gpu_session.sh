#!/usr/bin/env bash
# Everything this project measures on the H200, in one call of the device tool (run from the repo root):
#   bash tools/gpu_session.sh
# Two chains run side by side, one per GPU when the machine has two (nvidia-h200-x2), else one after
# the other: GPU 0 verifies the first half of the skill examples; GPU 1 runs the gpu-marked tests, the
# timer-fidelity benchmark, `optimize --agent none` on the bundled naive SGEMM, then the second half of
# the examples. Each step has a time limit and writes into /tmp/results, packed into $OUT/results.tgz
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
mapfile -t ids < <(cd /tmp && python3 -c "
from skillbase.corpus import load_corpus
from skillbase.verify_skills import example_folders
print('\n'.join(i for i, _ in example_folders(load_corpus())))")
half=$(( (${#ids[@]} + 1) / 2 ))
first=("${ids[@]:0:$half}"); second=("${ids[@]:$half}")
echo "${#ids[@]} skill examples; $gpus GPU(s)"
verify() {   # gpu shard ids...
  local gpu=$1 shard=$2; shift 2
  run_step "$gpu" "skills-verify-$shard" 420 skillbase skills verify "$@" --jobs 8 \
    --keep-profiles /tmp/results/population -o "/tmp/results/skills-verify-$shard.md"
}
chain_a() { verify 0 a "${first[@]}"; }
chain_b() {
  local g=$(( gpus > 1 ? 1 : 0 ))
  run_step "$g" pytest-gpu 240 python3 -m pytest -m gpu -q --timeout 150 -p no:cacheprovider "$repo/tests"
  run_step "$g" fidelity 120 python3 "$repo/benchmarks/fidelity.py" --out /tmp/results/fidelity.md
  run_step "$g" optimize 200 skillbase optimize "$repo/examples/naive_sgemm/naive_sgemm.cu" --agent none --rounds 2
  run_step "$g" explain 30 skillbase explain run_1
  run_step "$g" report 60 skillbase report run_1 -o /tmp/results/report
  verify "$g" b "${second[@]}"
}
if [ "$gpus" -gt 1 ]; then chain_a & chain_b & wait; else chain_a; chain_b; fi
pack
ls -la /tmp/results
