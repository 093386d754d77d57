#!/usr/bin/env bash
# Session 15, call C2: LLM trip 13: judge the 22 answers (run_2 re-decided) in trip/answers.tar.gz, profile the 5 reopened runs
# (53, 55, 56, 60, 61) to their next prompt, start prefix_sum BF16 (batch_4's last member). No BATCHES: every
# batch exists already (a second identical `bench optimize` would now be refused anyway).
set -uo pipefail
O=$OUT; T0=$SECONDS
OUT=/tmp/o1 STEP=resume LIMIT=${LIMIT:-500} WORKERS=${WORKERS:-1} bash tools/llm_bench_trip.sh
for f in /tmp/o1/*; do cp $f $O/llm-$(basename $f); done
echo "total $((SECONDS-T0)) s"
