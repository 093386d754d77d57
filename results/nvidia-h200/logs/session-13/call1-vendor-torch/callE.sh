#!/usr/bin/env bash
# Session 13, call E (issue 17): the BF16 vendor remainder (5 operators), vector_add's cuBLAS vendor rewritten,
# then the torch eager and torch.compile columns at preset l, each step time-limited within BUDGET.
set -uo pipefail
R=$PWD; O=$OUT; T0=$SECONDS; BUDGET=${BUDGET:-570}
if ! command -v skillbase >/dev/null; then
  source tools/device_setup.sh > $O/setup.log 2>&1 || { tail -20 $O/setup.log; exit 1; }
fi
source bench/tools/cudnn_env.sh > $O/cudnn_env.log 2>&1
export SKILLBASE_BENCH_DIR=$R/bench
python -c "import torch; print('torch', torch.__version__, torch.cuda.is_available())" > $O/torch.txt 2>&1
mkdir -p /tmp/vres && cp -r results/nvidia-h200 /tmp/vres/
echo "setup $((SECONDS-T0)) s"
cd /tmp
step() {  # step NAME LIMIT ARGS... : one `skillbase bench run`, each output line stamped with the seconds since T0
  local name=$1 limit=$2; shift 2
  local left=$((BUDGET - (SECONDS-T0) - 20))
  (( limit > left )) && limit=$left
  (( limit < 15 )) && { echo "$name: no time left"; return; }
  timeout -k 5 $limit skillbase bench run --results /tmp/vres "$@" 2>&1 \
    | while IFS= read -r line; do echo "$((SECONDS-T0))s $line"; done > $O/$name.log
  echo "$name: limit ${limit}s, at $((SECONDS-T0))s: $(tail -1 $O/$name.log)"
  cp /tmp/vres/nvidia-h200/bench/results.json $O/bench-results.json
}
step bf16-vendor 120 --impl vendor --dtype bf16 --ops spmv_coo,spmv_csc,spmv_csr,square_matrix_mul,top_k
step vector-add-vendor 40 --impl vendor --dtype fp32 --ops vector_add
step torch-fp32 240 --impl torch --dtype fp32 --preset l
step torch-bf16 200 --impl torch --dtype bf16 --preset l
step compile-fp32 300 --impl torch_compile --dtype fp32 --preset l
echo "total $((SECONDS-T0)) s"
