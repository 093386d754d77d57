"""The bench suite's files: 50 operators, every spec loads with the task loader, sizes span the
buckets the scores promise (a launch-bound size and one beyond the H200's L2), generated files are
current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from skillbase.bench import results as lib
from skillbase.bench import suite
from skillbase.task import load_task

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
L2_BYTES = 60 * 1024 * 1024

OPERATORS = """vector_add relu leaky_relu elu selu gelu sigmoid row_tanh swiglu silu_and_mul matrix_scalar_mul
matrix_copy reverse_array dot_product mse_loss hinge_loss cross_entropy_loss prefix_sum top_k sorting matrix_mul
square_matrix_mul matrix_vector_mul matrix_transpose matrix_power high_order_contraction softmax layer_norm rms_norm
batch_norm rope softmax_attention merge_attn_states triangle_attention spmv_coo spmv_csc spmv_csr spmv_ell spmm_coo
spmm_csc spmm_csr spmm_ell stencil_2d stencil_3d fft monte_carlo_int simpson_int conv_1d conv_2d
max_pooling_2d""".split()

SPECS = sorted(BENCH.glob("ops/*/*.task.yaml"))


def test_the_suite_has_msk_bench_fifty_operators():
    assert sorted(o.name for o in suite.discover(BENCH)) == sorted(OPERATORS)


def test_every_operator_has_fp32_and_bf16_or_says_why_not():
    for o in suite.discover(BENCH):
        dtypes = {i.dtype for i in o.implementations if i.kind == "baseline"}
        assert "fp32" in dtypes, o.name
        if o.bf16:
            assert "bf16" in dtypes, o.name
        else:
            assert o.bf16_reason, f"{o.name}: bf16 n/a needs a reason in op.yaml"
            assert "BF16: n/a" in (o.path / "README.md").read_text()


@pytest.mark.parametrize("spec_path", SPECS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_spec_loads_and_sizes_span_the_buckets(spec_path):
    spec = load_task(spec_path)
    assert tuple(spec.scored) == ("xs", "s", "m", "l", "xl")
    _, xs_bytes = spec.work("xs")
    _, xl_bytes = spec.work("xl")
    if spec_path.parent.name != "simpson_int":       # compute-only: no data at any size
        assert xs_bytes < lib.LAUNCH_BOUND_BYTES
        assert xl_bytes > L2_BYTES, "the largest size must not fit in the H200's L2"
    spec.resolve("irregular")


def test_generated_files_are_current():
    out = subprocess.run([sys.executable, str(BENCH / "tools" / "generate.py"), "--check"], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_vendor_implementations_declare_their_library():
    for o in suite.discover(BENCH):
        for i in o.implementations:
            if i.kind == "vendor":
                assert i.library, f"{o.name}/{i.name}: op.yaml vendor entry (library) missing"
                assert i.spec_path.name == f"{i.name}.task.yaml", f"{o.name}/{i.name}: a vendor kernel has its own spec"
                assert i.setup and i.teardown, (f"{o.name}/{i.name}: the spec's hooks create handles/plans (setup) "
                                                "and free them (teardown), never the launcher")
