#!/usr/bin/env bash
# Session 16, call E4 (issue 17): torch eager for the operators with no torch figure yet, at every preset (a job
# verifies at every size anyway), then torch.compile at preset l with whatever time is left, each step time-limited.
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
echo "total $((SECONDS-T0)) s"
step torch-bf16 200 --workers-per-gpu ${WORKERS:-1} --impl torch --dtype bf16 --ops square_matrix_mul,stencil_2d,stencil_3d,swiglu,top_k,triangle_attention,vector_add
step torch-compile-fp32 400 --workers-per-gpu ${WORKERS:-1} --impl torch_compile --dtype fp32 --preset l --ops layer_norm,rms_norm,gelu,relu,matrix_mul,conv_2d,batch_norm,cross_entropy_loss,softmax_attention,swiglu
echo "total $((SECONDS-T0)) s"
