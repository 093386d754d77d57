#!/usr/bin/env bash
# One trip of the batch LLM run (issue 16) to the GPU machine, inside one device call (repo root there):
#   STEP=start  bash tools/llm_bench_trip.sh  # record the batches, start their runs (baselines timed and
#                                             #   profiled, the engine's first prompts), pack the store
#   STEP=resume bash tools/llm_bench_trip.sh  # unpack trip/answers.tar.gz, judge every candidate present,
#                                             #   start members not started yet, pack the store
#   STEP=resume FROM=results/nvidia-h200/optimize/llm-run-2026-12-02 bash tools/llm_bench_trip.sh
#                                             # the same from that folder's committed store.tar.gz with its
#                                             #   answers-waiting.tar.gz laid over it, unpacked here (carrying a
#                                             #   20 MB archive beside the checkout passes the device tool's 64 MiB)
# The coders answer here between trips (docs/external-mode.md, "The trip to a GPU machine"):
#   skillbase store unpack store-N.tar.gz --store trip/store --force; skillbase pending --store trip/store
#   ... candidates ...; skillbase store pack trip/answers.tar.gz --store trip/store --without-reports --force
# Settings (environment): LIMIT seconds after which no further run starts (default 420); ROUNDS (3);
# PRESET (l); BATCHES, for STEP=start: `;`-separated batches, each `on:OP,OP,...` (engine-on),
# `off:OP,...` (engine-off, the ablation) or `on:all`; with STEP=resume they start after the judging
# (new batches only: `bench optimize` refuses operators an earlier batch with the same settings still has
# in progress, so rerunning a trip with the same BATCHES stops there, and only `resume --all` advances them);
# DTYPE (fp32 or bf16) for the batches started; ANSWERS (trip/answers.tar.gz), STORE (/tmp/store); WORKERS (1): worker processes per GPU (--workers-per-gpu:
# jobs overlap their loading, inputs, references and compiling; timing and profiling stay one at a time).
# What comes back in $OUT: store.tar.gz (the whole
# store; split into store.tar.gz.part-aa, -ab ... when over 15 MiB, the device tool's per-file limit),
# trip.log (each command's JSON and progress), device.txt, setup.log.
set -uo pipefail
STEP=${STEP:?STEP=start or STEP=resume}
LIMIT=${LIMIT:-420} ROUNDS=${ROUNDS:-3} PRESET=${PRESET:-l} DTYPE=${DTYPE:-fp32} BATCHES=${BATCHES:-}
WORKERS=${WORKERS:-1} FROM=${FROM:-}
ANSWERS=$(realpath -m "${ANSWERS:-trip/answers.tar.gz}")
source tools/trip_lib.sh   # repo, OUT, the install, device.txt, left, step, pack_store_back
store=${STORE:-/tmp/store}
start_batches() {   # each batch of $BATCHES started in the store (its baselines timed and profiled)
  local batch arm ops extra
  IFS=';' read -ra batches <<< "$BATCHES"
  for batch in "${batches[@]}"; do
    arm=${batch%%:*} ops=${batch#*:}
    extra=(); [ "$arm" = off ] && extra+=(--no-engine); [ "$ops" != all ] && extra+=(--ops "$ops")
    step "bench optimize $arm $DTYPE" skillbase bench optimize --agent external --preset "$PRESET" --rounds "$ROUNDS" \
      --dtype "$DTYPE" --store "$store" --time-limit "$(left)" --workers-per-gpu "$WORKERS" --json "${extra[@]}"
  done
}
case $STEP in
  start)
    : "${BATCHES:?BATCHES=on:all or e.g. on:relu,softmax;off:relu,softmax}"
    start_batches ;;
  resume)
    if [ -n "$FROM" ]; then   # the committed store and its waiting answers laid straight into the store
      from=$(realpath -m "$FROM")
      step "answers from $FROM" skillbase store unpack "$from/store.tar.gz" --store "$store" --force || exit 2
      if [ -f "$from/answers-waiting.tar.gz" ]; then tar -xzf "$from/answers-waiting.tar.gz" -C "$store" || exit 2; fi
    else
      step unpack skillbase store unpack "$ANSWERS" --store "$store" --force   # a warm machine keeps the last
    fi
    step "resume --all" skillbase resume --all --store "$store" --time-limit "$(left)" --workers-per-gpu "$WORKERS" \
      --json
    [ -n "$BATCHES" ] && start_batches ;;   # new batches after the judging, in the same store
  *) echo "STEP is start or resume"; exit 2 ;;
esac
pack_store_back "$store"
