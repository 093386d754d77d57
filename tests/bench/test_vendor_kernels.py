"""Vendor kernels as the harness will take them (issue 17), checked without a GPU: every vendor file passes
the harness's static check under its own spec (the library allowed, setup/teardown exempt), and each
cuDNN operator's BF16 variant is either a vendor kernel on BF16 tensors with FP32 compute or says
precisely why cuDNN's legacy API cannot compute the baseline's function. Building them is
test_compile.py's (skipped with the header's name where cudnn.h is missing); running them is the GPU's."""

from __future__ import annotations

import re

import pytest

from skillbase.bench import suite
from skillbase.harness.runtime import static_violations
from skillbase.harness.static_check import check_source
from skillbase.task import load_task

VENDORS = [(o, i) for o in suite.discover() for i in o.implementations if i.kind == "vendor"]
CUDNN_OPS = sorted({o.name for o, i in VENDORS if i.library == "cudnn"})
CUDNN_BF16 = [(o, i) for o, i in VENDORS if i.library == "cudnn" and i.dtype == "bf16"]


@pytest.mark.parametrize("op,impl", VENDORS, ids=lambda v: getattr(v, "name", ""))
def test_vendor_kernel_passes_the_static_check_under_its_spec(op, impl):
    spec = load_task(impl.spec_path)           # also checks the launcher's signature against the spec
    assert spec.kernel_path == impl.cu_path
    assert static_violations(spec, impl.cu_path) == [], f"{op.name}/{impl.name}"


def test_each_cudnn_operator_has_a_bf16_vendor_or_says_precisely_why_not():
    assert len(CUDNN_OPS) == 9, CUDNN_OPS
    for name in CUDNN_OPS:
        op = next(o for o in suite.discover() if o.name == name)
        has_bf16 = any(i.kind == "vendor" and i.dtype == "bf16" for i in op.implementations)
        if has_bf16:
            assert "BF16" not in (op.no_vendor or ""), name
            continue
        reason = op.no_vendor or ""
        assert reason.startswith("BF16: ") and "not implemented yet" not in reason, (name, reason)
        assert "docs.nvidia.com/deeplearning/cudnn" in reason, f"{name}: the reason cites cuDNN's documentation"


def _descriptor_types(source: str) -> dict[str, set[str]]:
    """The data types each kind of cuDNN descriptor is set with in SOURCE."""
    found: dict[str, set[str]] = {}
    for call in ("cudnnSetTensor4dDescriptor", "cudnnSetFilter4dDescriptor", "cudnnSetConvolution2dDescriptor"):
        for args in re.findall(rf"{call}\(([^;]*?)\)\s*!=", source, flags=re.S):
            found.setdefault(call, set()).update(re.findall(r"CUDNN_DATA_\w+", args))
    return found


@pytest.mark.parametrize("op,impl", CUDNN_BF16, ids=lambda v: getattr(v, "name", ""))
def test_cudnn_bf16_vendor_uses_bf16_tensors_and_fp32_compute(op, impl):
    source = impl.cu_path.read_text()
    types = _descriptor_types(source)
    assert types.get("cudnnSetTensor4dDescriptor") == {"CUDNN_DATA_BFLOAT16"}, (op.name, types)
    if "cudnnConvolutionForward" in source:
        # PSEUDO_BFLOAT16_CONFIG: BF16 x, w and y, FP32 accumulation (the baseline's).
        assert types["cudnnSetFilter4dDescriptor"] == {"CUDNN_DATA_BFLOAT16"}, op.name
        assert types["cudnnSetConvolution2dDescriptor"] == {"CUDNN_DATA_FLOAT"}, op.name
    assert "CUDNN_DATA_HALF" not in source and "__half" not in source, op.name
    assert re.search(rf'extern "C" void {op.name}\([^)]*__nv_bfloat16', source), op.name


def test_the_same_kernel_without_cudnn_allowed_is_refused():
    # The control for the test above: the library call passes only because the spec allows it.
    for op, impl in CUDNN_BF16:
        spec = load_task(impl.spec_path)
        assert list(spec.allow) == ["cudnn"], (op.name, spec.allow)
        rules = {v.rule for v in check_source(impl.cu_path, allow=(), hooks=spec.hook_names)}
        assert "library-cudnn" in rules, (op.name, rules)
