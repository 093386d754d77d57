#!/usr/bin/env bash
# What this project measures on the H200, in few calls of the device tool (run from the repo root):
#   PLAN=verify bash tools/gpu_session.sh  # skills verify: first half of the examples on GPU 0, second on GPU 1
#   PLAN=tests bash tools/gpu_session.sh   # GPU 0: gpu tests, fidelity, optimize | GPU 1: bench baseline+vendor
#   PLAN=smoke bash tools/gpu_session.sh # two examples, check, fidelity: a quick look after a harness change
#   PLAN=loop bash tools/gpu_session.sh  # GPU 0: the loop's end-to-end test, then every gpu test | GPU 1: BF16 baselines
#   PLAN=suite bash tools/gpu_session.sh # the whole bench suite on every GPU (--gpus 0,1 on two), each step timed
#   PLAN=restructure bash tools/gpu_session.sh  # GPU 0: the examples' saved profiles, the loop test, every gpu test
#   PLAN=gputests bash tools/gpu_session.sh     # GPU 0: the loop test, then every other gpu test
#   PLAN=session5 bash tools/gpu_session.sh     # GPU 0: session 5's checks (loop, MCP, alignment, CUPTI timing,
#                                               #   vendor/torch references, batch round, fidelity), each time-limited
#   PLAN=session7 VERIFY_IDS="a b" BENCH_STEPS="vendor:fp32 torch:fp32" DEADLINE=560 bash tools/gpu_session.sh
#                                               # examples, then bench columns, each step cut to the deadline
#   PLAN=timing DEADLINE=560 bash tools/gpu_session.sh  # the timing's GPU tests (shared slots, CUPTI, two
#                                               #   workers, the side-stream cheat), then the A/A experiment
#                                               #   (tools/measure/aa_bias.py) and CUPTI on/off in one process
#                                               #   (tools/measure/cupti_overhead.py) with the time left
#   PLAN=session6 VERIFY_IDS="a b" bash tools/gpu_session.sh  # the LLM run's three static-check refusals checked
#                                               #   again (trip/recheck/, carried), then `skills verify` per id
# On a one-GPU machine the two chains run one after the other. Each step has a time limit and writes
# into /tmp/results, packed into $OUT/results.tgz after every step (an interrupted call keeps what it
# measured). Python runs from /tmp so that the checkout's skillbase/ does not shadow the install.
set -uo pipefail
repo=$PWD
OUT=${OUT:-/tmp/out}
PLAN=${PLAN:-verify}
mkdir -p "$OUT" /tmp/results
source tools/device_setup.sh > /tmp/results/setup.log 2>&1 || { cat /tmp/results/setup.log; exit 1; }
export SKILLBASE_CACHE=/tmp/sbcache SKILLBASE_STORE=/tmp/results/store
gpus=$(nvidia-smi -L | wc -l)
{ date -u +%FT%TZ; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv,noheader; } > /tmp/results/device.txt
pack() { tar -C /tmp -czf "$OUT/results.tgz" results 2>/dev/null; }
# bench run merges into the checkout's results/<gpu>/bench/ (--results "$repo/results", where the committed
# results live): copy those folders into what comes back (as results/results/<gpu>/bench/), then pack.
bench_results=$repo/results
save_bench() {
  ( cd "$repo" && for d in results/*/bench; do mkdir -p "/tmp/results/$d" && cp -r "$d/." "/tmp/results/$d/"; done ) 2>/dev/null
  pack
}
run_step() {   # gpu name limit command...
  local gpu=$1 name=$2 limit=$3; shift 3
  echo "== [gpu $gpu] $name ($(date -u +%T), limit ${limit}s)"
  local t0=$SECONDS
  ( cd /tmp && CUDA_VISIBLE_DEVICES=$gpu timeout -k 5 "$limit" "$@" ) > "/tmp/results/$name.log" 2>&1
  echo "rc=$? wall=$((SECONDS - t0))s" >> "/tmp/results/$name.log"
  tail -n 2 "/tmp/results/$name.log"
  pack
}
ids=$(ls skills/*/*/examples/task.yaml | awk -F/ '{print $3}' | sort)
half=$(( $(echo "$ids" | wc -l) / 2 ))
first=$(echo "$ids" | head -n "$half" | tr '\n' ' ')
second=$(echo "$ids" | tail -n +"$((half + 1))" | tr '\n' ' ')
verify() {   # gpu name ids...
  local gpu=$1 name=$2; shift 2
  run_step "$gpu" "$name" "${VERIFY_LIMIT:-560}" skillbase skills verify "$@" --jobs 12 \
    --keep-profiles /tmp/results/population -o "/tmp/results/$name.md"
}
tests_chain() {
  local g=$1
  run_step "$g" pytest-gpu "${PYTEST_LIMIT:-170}" python3 -m pytest -m gpu -q -rA --timeout 90 -p no:cacheprovider \
    --ignore "$repo/tests/corpus/test_skill_examples.py" "$repo/tests"
  run_step "$g" optimize "${OPTIMIZE_LIMIT:-170}" skillbase optimize "$repo/examples/naive_sgemm/naive_sgemm.cu" \
    --agent none --rounds 1
  run_step "$g" explain 20 skillbase explain run_1
  run_step "$g" report 30 skillbase report run_1 -o /tmp/results/report
  [ -n "${VERIFY_AGAIN:-}" ] && verify "$g" skills-verify-again $VERIFY_AGAIN
}
bench_chain() {   # results land in the checkout's results/<gpu>/bench/, copied into /tmp/results after each step
  local g=$1
  export SKILLBASE_BENCH_DIR=$repo/bench
  run_step "$g" bench-vendor-fp32 "${BENCH_LIMIT:-260}" skillbase bench run --impl vendor --dtype fp32 \
    --results "$bench_results"
  save_bench
  # 24 operators since the cuDNN BF16 vendors (about 120 sizes and 8 more builds)
  run_step "$g" bench-vendor-bf16 "${VENDOR_BF16_LIMIT:-180}" skillbase bench run --impl vendor --dtype bf16 \
    --results "$bench_results"
  save_bench
  run_step "$g" bench-baseline-fp32 "${BASELINE_LIMIT:-120}" skillbase bench run --impl baseline --dtype fp32 \
    --results "$bench_results"
  save_bench
}
g1=$(( gpus > 1 ? 1 : 0 ))
echo "$gpus GPU(s), plan $PLAN"
case $PLAN in
  smoke) a() { VERIFY_LIMIT=150 verify 0 skills-verify-smoke alg.fewer_passes mem.vectorize; }
         b() { run_step "$g1" check-vector_add 60 skillbase check "$repo/examples/vector_add/vector_add.cu"
               run_step "$g1" fidelity 90 python3 "$repo/tools/measure/fidelity.py" --out /tmp/results/fidelity.md; } ;;
  verify) a() { verify 0 skills-verify-1 $first; }; b() { verify "$g1" skills-verify-2 $second; } ;;
  rest) a() { run_step 0 pytest-gpu-rest 150 python3 -m pytest -m gpu -q -rA --timeout 90 -p no:cacheprovider \
               "$repo/tests/harness/test_scratch_and_hooks.py"; }
        b() { export SKILLBASE_BENCH_DIR=$repo/bench
              run_step "$g1" bench-baseline-fp32-rest 150 skillbase bench run --impl baseline --dtype fp32 --ops "$BENCH_OPS" \
                --results "$bench_results"
              save_bench; } ;;
  tests) a() { tests_chain 0; }; b() { bench_chain "$g1"; } ;;
  loop) a() { run_step 0 pytest-loop-gpu "${LOOP_LIMIT:-330}" python3 -m pytest -m gpu -q -rA --timeout 300 \
                -p no:cacheprovider "$repo/tests/run/test_loop_gpu.py"
              run_step 0 pytest-gpu-all "${PYTEST_LIMIT:-240}" python3 -m pytest -m gpu -q -rA --timeout 90 \
                -p no:cacheprovider --ignore "$repo/tests/corpus/test_skill_examples.py" \
                --ignore "$repo/tests/run/test_loop_gpu.py" "$repo/tests"; }
        b() { export SKILLBASE_BENCH_DIR=$repo/bench
              [ -n "${BENCH_OPS:-}" ] && run_step "$g1" bench-baseline-fp32-rest 150 \
                skillbase bench run --impl baseline --dtype fp32 --ops "$BENCH_OPS" --results "$bench_results"
              run_step "$g1" bench-baseline-bf16 "${BF16_LIMIT:-400}" skillbase bench run --impl baseline --dtype bf16 \
                --results "$bench_results"
              save_bench; } ;;
  suite) a() { export SKILLBASE_BENCH_DIR=$repo/bench   # the whole suite on every GPU, timed step by step
               local all; all=$(seq -s, 0 $((gpus - 1)))
               run_step "$all" suite-baseline "${SUITE_LIMIT:-420}" skillbase bench run --impl baseline --gpus "$all" \
                 --results "$bench_results"
               run_step "$all" suite-vendor 150 skillbase bench run --impl vendor --gpus "$all" --results "$bench_results"
               save_bench; }
         b() { :; } ;;
  restructure) a() {   # after a restructure: the bundled examples' saved profiles, then every GPU test
               for ex in naive_sgemm vector_add conv2d_direct; do
                 run_step 0 "profile-$ex" 120 skillbase profile "$repo/examples/$ex/$ex.cu" -o "/tmp/results/examples/$ex"
               done
               run_step 0 pytest-loop-gpu "${LOOP_LIMIT:-200}" python3 -m pytest -m gpu -q -rA --timeout 180 \
                 -p no:cacheprovider "$repo/tests/run/test_loop_gpu.py"
               run_step 0 pytest-gpu-all "${PYTEST_LIMIT:-280}" python3 -m pytest -m gpu -q -rA --timeout 90 \
                 -p no:cacheprovider --ignore "$repo/tests/corpus/test_skill_examples.py" \
                 --ignore "$repo/tests/run/test_loop_gpu.py" "$repo/tests"; }
               b() { :; } ;;
  gputests) a() { run_step 0 pytest-loop-gpu "${LOOP_LIMIT:-200}" python3 -m pytest -m gpu -q -rA --timeout 180 \
                   -p no:cacheprovider "$repo/tests/run/test_loop_gpu.py"
                 run_step 0 pytest-gpu-all "${PYTEST_LIMIT:-280}" python3 -m pytest -m gpu -q -rA --timeout 90 \
                   -p no:cacheprovider --ignore "$repo/tests/corpus/test_skill_examples.py" \
                   --ignore "$repo/tests/run/test_loop_gpu.py" "$repo/tests"; }
            b() { :; } ;;
  session5) a() { local P="python3 -m pytest -m gpu -q -rA -p no:cacheprovider"
                 run_step 0 pytest-loop-gpu 110 $P --timeout 100 "$repo/tests/run/test_loop_gpu.py"
                 run_step 0 pytest-mcp-gpu 70 $P --timeout 65 "$repo/tests/mcp/test_gpu.py"
                 run_step 0 pytest-alignment-gpu 110 $P --timeout 100 "$repo/tests/harness/test_alignment.py"
                 run_step 0 pytest-timing-gpu 100 $P --timeout 95 "$repo/tests/harness/test_timing_cupti.py" -k "not three_checks"
                 run_step 0 pytest-references-gpu 100 bash -c "source $repo/bench/tools/cudnn_env.sh; $P --timeout 95 \
                   $repo/tests/bench/test_references_gpu.py -k 'relu or spmv_csc or conv_2d or top_k or softmax_attention'"
                 run_step 0 pytest-batch-gpu 170 $P --timeout 165 "$repo/tests/run/test_batch_gpu.py"
                 run_step 0 fidelity 90 python3 "$repo/tools/measure/fidelity.py" --out /tmp/results/fidelity.md
                 run_step 0 pytest-arch-gpu 60 $P --timeout 55 "$repo/tests/harness/test_build_arch.py"
                 run_step 0 pytest-schemas-gpu 80 $P --timeout 75 "$repo/tests/cli/test_schemas_json.py"
                 run_step 0 pytest-report-html-gpu 60 $P --timeout 55 "$repo/tests/run/test_report_html.py"; }
            b() { :; } ;;
  session6) a() {   # the three candidates of the LLM bench run refused as host-static-state, checked again after
                   # the fix (trip/recheck/run_N.cu, carried), then new skill examples, each time-limited
                 local run op
                 for run in run_2:row_tanh run_4:cross_entropy_loss run_25:batch_norm; do
                   op=${run#*:} run=${run%%:*}
                   run_step 0 "recheck-$run-$op" 40 skillbase check "$repo/bench/ops/$op/fp32.cu" \
                     --candidate "$repo/trip/recheck/$run.cu" --preset l
                 done
                 for id in ${VERIFY_IDS:-}; do
                   run_step 0 "skills-verify-$id" "${VERIFY_LIMIT:-45}" skillbase skills verify "$id" \
                     --keep-profiles /tmp/results/population -o "/tmp/results/skills-verify-$id.md"
                 done; }
            b() { :; } ;;
  session7) a() {   # new skill examples (one verify, parallel builds), then vendor and PyTorch bench columns;
                   # each step's limit is cut to what is left before DEADLINE (seconds since the script started)
                 local left
                 until_deadline() { left=$(( ${DEADLINE:-560} - SECONDS )); [ "$left" -gt "$1" ] && left=$1; [ "$left" -gt 10 ]; }
                 export SKILLBASE_BENCH_DIR=$repo/bench
                 source "$repo/bench/tools/cudnn_env.sh" > /tmp/results/cudnn_env.log 2>&1
                 if [ -n "${VERIFY_IDS:-}" ] && until_deadline "${VERIFY_LIMIT:-300}"; then
                   VERIFY_LIMIT=$left verify 0 skills-verify-new $VERIFY_IDS
                 fi
                 for step in ${BENCH_STEPS:-}; do   # impl:dtype[:ops], e.g. vendor:fp32 torch:fp32:relu,gelu
                   IFS=: read -r impl dtype ops <<< "$step"
                   until_deadline "${BENCH_LIMIT:-300}" || break
                   run_step 0 "bench-$impl-$dtype" "$left" skillbase bench run --impl "$impl" --dtype "$dtype" \
                     ${ops:+--ops "$ops"} --results "$bench_results"
                   save_bench
                 done; }
            b() { :; } ;;
  timing) a() {   # does timing both kernels on one set of buffers remove the A/A bias (issue 16)?
              local P="python3 -m pytest -m gpu -v -rA -p no:cacheprovider" left
              run_step 0 pytest-timing-slots-gpu 150 $P "$repo/tests/harness/test_timing_slots.py"
              run_step 0 pytest-cupti-gpu 120 $P "$repo/tests/harness/test_timing_cupti.py"
              run_step 0 pytest-workers-gpu 150 $P "$repo/tests/harness/test_workers_per_gpu.py" "$repo/tests/run/test_prebuild.py"
              # the two experiments share what is left: the A/A first (it decides the shared-slots default)
              left=$(( ${DEADLINE:-560} - SECONDS - 15 ))
              local aa=$(( left * 55 / 100 ))
              [ "$aa" -gt 60 ] && run_step 0 aa-bias "$((aa + 10))" python3 "$repo/tools/measure/aa_bias.py" \
                --out /tmp/results/aa --budget-s "$aa"
              left=$(( ${DEADLINE:-560} - SECONDS - 15 ))
              [ "$left" -gt 60 ] && run_step 0 cupti-overhead "$((left + 10))" python3 \
                "$repo/tools/measure/cupti_overhead.py" --out /tmp/results/co --budget-s "$left"; }
          b() { :; } ;;
  *) echo "unknown PLAN=$PLAN"; exit 2 ;;
esac
if [ "$gpus" -gt 1 ]; then a & b & wait; else a; b; fi
pack
ls -la /tmp/results
