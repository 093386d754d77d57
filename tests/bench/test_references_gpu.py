"""GPU: every vendor kernel and every PyTorch implementation of the bench verified by the harness at
one size (issue 17), under its own task spec, against the operator's baseline kernel as reference,
with the harness's usual defences (poisoned outputs, input checks, launch-stream probes, repeats).

    python -m pytest -q -p no:cacheprovider -m gpu tests/bench/test_references_gpu.py

Each case is one worker process (torch imports there); torch.compile cases compile at the `xs` size
in the warm-up, outside timing. Nothing is timed here: `skillbase bench run --impl ...` times them.
"""

from __future__ import annotations

import pytest

from skillbase.bench import runner, suite

IMPLS = [i for o in suite.discover() for i in o.implementations if i.kind in ("vendor", "torch", "torch_compile")]
# torch.compile is verified on a sample (one elementwise, one reduction, one GEMM, one norm, one
# sparse, attention): compiling every operator here would take most of the test's time.
COMPILED_SAMPLE = {"relu", "mse_loss", "matrix_mul", "layer_norm", "spmv_coo", "softmax_attention"}
CASES = [i for i in IMPLS if i.kind != "torch_compile" or i.op in COMPILED_SAMPLE]


@pytest.mark.gpu
@pytest.mark.parametrize("impl", CASES, ids=lambda i: f"{i.op}/{i.name}")
def test_verified_at_one_size(impl):
    from skillbase.harness.runtime import Options, evaluate
    from skillbase.task import load_task

    job = runner.BenchJob.of(impl, ("xs",))
    missing = runner.library_missing(load_task(job.spec), job.candidate)
    if missing:
        pytest.skip(missing)
    spec = load_task(job.spec)
    options = Options(time=False, verify_sizes=[("xs", spec.sizes_for("xs"))], torch_compile=job.torch_compile,
                      timeout_s=300)
    result = evaluate(job.task, candidate=job.candidate, options=options)
    assert result.status == "ok", f"{result.status}: {result.reason}\n{result.log[-2000:]}"
    assert result.correct
