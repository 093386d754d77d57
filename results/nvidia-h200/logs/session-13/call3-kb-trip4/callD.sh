#!/usr/bin/env bash
# Session 13, call D: a KernelBench trip (3 round-1 answers to runs 1-3, first kernels of runs 5-17 and 30-49;
# run 4 (level1/4, 8.6 GB of inputs) and the activations (runs 18-29) held back: several minutes each).
set -uo pipefail
O=$OUT; T0=$SECONDS
OUT=/tmp/o2 STEP=resume ANSWERS=trip/kb_answers3.tar.gz LIMIT=${LIMIT:-420} bash tools/kernelbench_trip.sh
for f in /tmp/o2/*; do cp $f $O/kb-$(basename $f); done
echo "total $((SECONDS-T0)) s"
