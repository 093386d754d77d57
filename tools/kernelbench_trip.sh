#!/usr/bin/env bash
# One trip of the KernelBench public-set run (issue 20) to the GPU machine, inside one device call (repo root
# there; docs/kernelbench.md, "The H200 session"). The imported tasks live INSIDE the store (<store>/kb_tasks/),
# so the store archive carries them both ways: unpacking moves their paths to the machine it lands on, and the
# first kernels the device writes (each task's model.cu) come back with it.
#   STEP=resume bash tools/kernelbench_trip.sh  # unpack $ANSWERS (the coders' store), judge every answer present
#                                               #   (a member started with --defer-baselines times PyTorch eager
#                                               #   and torch.compile first), start members not started, pack
#   STEP=baselines bash tools/kernelbench_trip.sh  # unpack $ANSWERS as STEP=resume does, time what every
#                                               #   member's PyTorch times lack (torch.compile for a batch started
#                                               #   with --no-compile, eager where it failed; `kernelbench
#                                               #   baselines`; RETRY_FAILED=1: a failed torch.compile too;
#                                               #   BASELINES_PROBLEMS="level1/14 level2/3": only these), pack
#   STEP=baselines+resume bash tools/kernelbench_trip.sh  # unpack once, `kernelbench baselines` with BASELINES_SHARE
#                                               #   % of the time (default 50), then `resume --all` with the rest
#   STEP=start  bash tools/kernelbench_trip.sh  # only for a batch NOT started here with --defer-baselines:
#                                               #   unpack $TASKS (kb_tasks/ folders), start the batch (each member
#                                               #   times PyTorch, then waits for its first kernel), pack
# Settings (environment): LIMIT seconds after which no further member starts or is judged (default 420);
# ANSWERS (trip/kb_answers.tar.gz: `skillbase store pack ... --without-reports` here); TASKS
# (trip/kb_tasks.tar.gz: `tar -czf trip/kb_tasks.tar.gz -C DIR kb_tasks`); for STEP=start: ROUNDS (3),
# REPAIRS (3), COMPILE=0 (PyTorch eager only: about half the start cost), NO_GPU=1 (compile-only, the CPU test);
# STORE (/tmp/kbstore); WORKERS (1): worker processes per GPU (--workers-per-gpu: a member's load, inputs,
# PyTorch reference and compile overlap another's; timing, probes and ncu stay one at a time). What comes
# back in $OUT: store.tar.gz (split into store.tar.gz.part-aa, -ab ... over 15 MiB), trip.log (each
# command's JSON and progress), device.txt, setup.log.
set -uo pipefail
STEP=${STEP:?STEP=start, resume, baselines or baselines+resume}
LIMIT=${LIMIT:-420} ROUNDS=${ROUNDS:-3} REPAIRS=${REPAIRS:-3} COMPILE=${COMPILE:-1} NO_GPU=${NO_GPU:-0}
WORKERS=${WORKERS:-1} ANSWERS=${ANSWERS:-trip/kb_answers.tar.gz} TASKS=${TASKS:-trip/kb_tasks.tar.gz} STORE=${STORE:-/tmp/kbstore}
case $STEP in start|resume|baselines|baselines+resume) ;; *) echo "STEP is start, resume, baselines or baselines+resume"; exit 2 ;; esac
ANSWERS=$(realpath -m "$ANSWERS") TASKS=$(realpath -m "$TASKS") STORE=$(realpath -m "$STORE")
archive=$ANSWERS; [ "$STEP" = start ] && archive=$TASKS
[ -f "$archive" ] || { echo "no $archive: carry it (the device tool's carry) or name it (ANSWERS=, TASKS=)"; exit 2; }
if [ "$STEP" = start ] && [ -e "$STORE/runs.sqlite3" ]; then
  echo "$STORE holds a store already: STEP=resume continues it"; exit 2
fi
source tools/trip_lib.sh   # repo, OUT, the install, device.txt, left, step, pack_store_back
case $STEP in
  start)
    mkdir -p "$STORE" && tar -xzf "$TASKS" -C "$STORE" || { echo "cannot unpack $TASKS into $STORE"; exit 2; }
    extra=()
    [ "$COMPILE" = 0 ] && extra+=(--no-compile)
    [ "$NO_GPU" = 1 ] && extra+=(--no-gpu)
    step "kernelbench optimize" skillbase kernelbench optimize "$STORE/kb_tasks" --agent external \
      --rounds "$ROUNDS" --repairs "$REPAIRS" --store "$STORE" --time-limit "$(left)" --workers-per-gpu "$WORKERS" \
      --json "${extra[@]}" ;;
  *)
    # --force: a warm machine may hold the store of the previous trip; the coders' archive is newer.
    step unpack skillbase store unpack "$ANSWERS" --store "$STORE" --force || exit 2
    if [ "$STEP" != resume ]; then
      share=100; [ "$STEP" = baselines+resume ] && share=${BASELINES_SHARE:-50}
      extra=(); [ "${RETRY_FAILED:-0}" = 1 ] && extra+=(--retry-failed)
      for p in ${BASELINES_PROBLEMS:-}; do extra+=(--problems "$p"); done
      limit=$(( $(left) * share / 100 )); [ "$limit" -lt 1 ] && limit=1
      step "kernelbench baselines" skillbase kernelbench baselines --store "$STORE" --time-limit "$limit" \
        --workers-per-gpu "$WORKERS" --json "${extra[@]}"
    fi
    if [ "$STEP" != baselines ]; then
      step "resume --all" skillbase resume --all --store "$STORE" --time-limit "$(left)" \
        --workers-per-gpu "$WORKERS" --json
    fi ;;
esac
pack_store_back "$STORE"
