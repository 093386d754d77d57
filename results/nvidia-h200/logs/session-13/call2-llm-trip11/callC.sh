#!/usr/bin/env bash
# Session 13, call C: LLM trip 11 (17 answers, 6 reopened runs whose last kernel is profiled here), then the BF16
# batch (engine on, 15 operators) started with whatever time is left; members not started wait for the next trip.
set -uo pipefail
O=$OUT; T0=$SECONDS
OUT=/tmp/o1 STEP=resume LIMIT=${LIMIT:-500} DTYPE=bf16 \
  BATCHES="on:softmax,rms_norm,layer_norm,gelu,swiglu,matrix_mul,matrix_vector_mul,dot_product,matrix_transpose,rope,conv_2d,stencil_2d,softmax_attention,spmv_csr,prefix_sum" \
  bash tools/llm_bench_trip.sh
for f in /tmp/o1/*; do cp $f $O/llm-$(basename $f); done
echo "total $((SECONDS-T0)) s"
