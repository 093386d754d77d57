#!/usr/bin/env bash
# One trip of the batch LLM run (issue 16) to the GPU machine, inside one device call (repo root there):
#   STEP=start  bash tools/llm_bench_trip.sh  # record the batches, start their runs (baselines timed and
#                                             #   profiled, the engine's first prompts), pack the store
#   STEP=resume bash tools/llm_bench_trip.sh  # unpack trip/answers.tar.gz, judge every candidate present,
#                                             #   start members not started yet, pack the store
# The coders answer here between trips (docs/external-mode.md, "The trip to a GPU machine"):
#   skillbase store unpack store-N.tar.gz --store trip/store --force; skillbase pending --store trip/store
#   ... candidates ...; skillbase store pack trip/answers.tar.gz --store trip/store --without-reports --force
# Settings (environment): LIMIT seconds after which no further run starts (default 420); ROUNDS (3);
# PRESET (l); BATCHES, for STEP=start: `;`-separated batches, each `on:OP,OP,...` (engine-on),
# `off:OP,...` (engine-off, the ablation) or `on:all`. What comes back in $OUT: store.tar.gz (the whole
# store; split into store.tar.gz.part-aa, -ab ... when over 15 MiB, the device tool's per-file limit),
# trip.log (each command's JSON and progress), device.txt, setup.log.
set -uo pipefail
repo=$PWD
OUT=${OUT:-/tmp/out}
STEP=${STEP:?STEP=start or STEP=resume}
LIMIT=${LIMIT:-420} ROUNDS=${ROUNDS:-3} PRESET=${PRESET:-l}
mkdir -p "$OUT"
source tools/device_setup.sh > "$OUT/setup.log" 2>&1 || { cat "$OUT/setup.log"; exit 1; }
export SKILLBASE_CACHE=/tmp/sbcache SKILLBASE_BENCH_DIR=$repo/bench PYTHONUNBUFFERED=1
store=/tmp/store
t0=$SECONDS
{ date -u +%FT%TZ; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  ncu --version | tail -1; nvcc --version | tail -1; } > "$OUT/device.txt"
left() { local s=$((LIMIT - (SECONDS - t0))); echo $((s > 1 ? s : 1)); }
step() {   # name command...: the command's JSON and its progress lines into trip.log, its wall time after
  local name=$1; shift
  local s0=$SECONDS
  echo "== $name ($(date -u +%T)): $*" >> "$OUT/trip.log"
  ( cd /tmp && timeout -k 5 $(( $(left) + 60 )) "$@" ) >> "$OUT/trip.log" 2>&1
  echo "== $name rc=$? wall=$((SECONDS - s0))s" >> "$OUT/trip.log"
  tail -n 1 "$OUT/trip.log"
}
case $STEP in
  start)
    IFS=';' read -ra batches <<< "${BATCHES:?BATCHES=on:all or e.g. on:relu,softmax;off:relu,softmax}"
    for batch in "${batches[@]}"; do
      arm=${batch%%:*} ops=${batch#*:}
      extra=(); [ "$arm" = off ] && extra+=(--no-engine); [ "$ops" != all ] && extra+=(--ops "$ops")
      step "bench optimize $arm" skillbase bench optimize --agent external --preset "$PRESET" --rounds "$ROUNDS" \
        --store "$store" --time-limit "$(left)" --json "${extra[@]}"
    done ;;
  resume)
    step unpack skillbase store unpack "$repo/trip/answers.tar.gz" --store "$store"
    step "resume --all" skillbase resume --all --store "$store" --time-limit "$(left)" --json ;;
  *) echo "STEP is start or resume"; exit 2 ;;
esac
step pending skillbase pending --store "$store"
( cd /tmp && skillbase store pack "$OUT/store.tar.gz" --store "$store" --force ) >> "$OUT/trip.log" 2>&1
if [ "$(stat -c %s "$OUT/store.tar.gz")" -gt $((15 << 20)) ]; then
  split -b 15M "$OUT/store.tar.gz" "$OUT/store.tar.gz.part-" && rm "$OUT/store.tar.gz"
fi
ls -l "$OUT" | tail -n +2
