"""PyTorch implementations (`kernel: torch_impl.py` task specs) without a GPU: the spec's rules, the
static check's refusal outside `allow: [torch]`, the launcher's signature binding and shapes, and
every bench torch_impl.py run on CPU torch (GPU runs: tests/bench/test_torch_gpu.py)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

from skillbase.errors import InputError
from skillbase.harness import torch_launcher
from skillbase.harness.native import LoadError
from skillbase.harness.runtime import Options, evaluate
from skillbase.harness.static_check import check_source, errors_only
from skillbase.task import load_task

REPO = Path(__file__).resolve().parents[2]
OPS = REPO / "bench" / "ops"
VECTOR_ADD = REPO / "examples" / "vector_add" / "vector_add.cu"

torch = pytest.importorskip("torch")


def _torch_task(tmp_path: Path, body: str, allow: str = "[torch]", extra: str = "") -> Path:
    """The vector_add task with a PyTorch kernel file holding `body`."""
    (tmp_path / "impl.py").write_text(body)
    shutil.copy(VECTOR_ADD, tmp_path / "vector_add.cu")
    spec = (VECTOR_ADD.with_name("vector_add.task.yaml")).read_text()
    spec = spec.replace("reference: null", "") + f"\nkernel: impl.py\nallow: {allow}\n{extra}"
    if "allow:" in (VECTOR_ADD.with_name("vector_add.task.yaml")).read_text():
        pytest.skip("the example task already has an allow: line")
    (tmp_path / "torch.task.yaml").write_text(spec)
    return tmp_path / "torch.task.yaml"


ADD = "import torch\n\n\ndef vector_add(a, b, c, n):\n    torch.add(a, b, out=c)\n"


def test_a_torch_spec_names_its_python_kernel_and_allows_torch(tmp_path):
    spec = load_task(_torch_task(tmp_path, ADD))
    assert spec.is_torch and spec.kernel_path.name == "impl.py" and "torch" in spec.allow


def test_a_python_kernel_without_allow_torch_is_a_spec_error(tmp_path):
    with pytest.raises(InputError, match="does not allow torch"):
        load_task(_torch_task(tmp_path, ADD, allow="[]"))


def test_the_function_must_take_the_launchers_arguments_in_order(tmp_path):
    wrong = ADD.replace("(a, b, c, n)", "(a, b, n, c)")
    with pytest.raises(InputError, match=r"must take the launcher's arguments in order: \(a, b, c, n\)"):
        load_task(_torch_task(tmp_path, wrong))
    with pytest.raises(InputError, match="defines no function 'vector_add'"):
        load_task(_torch_task(tmp_path, ADD.replace("def vector_add", "def add")))


def test_a_torch_kernel_has_no_hooks_or_link(tmp_path):
    with pytest.raises(InputError, match="no hooks or link"):
        load_task(_torch_task(tmp_path, ADD, extra="hooks: {setup: bench_setup}\n"))


def test_the_static_check_refuses_python_unless_the_task_allows_torch(tmp_path):
    path = tmp_path / "vector_add.py"
    path.write_text(ADD)
    assert [v.rule for v in errors_only(check_source(path))] == ["python-candidate"]
    assert check_source(path, allow=["torch"]) == []


def test_a_python_candidate_for_a_cuda_task_is_rejected_before_any_gpu(tmp_path):
    path = tmp_path / "vector_add.py"
    path.write_text(ADD)
    result = evaluate(VECTOR_ADD, candidate=path)
    assert result.status == "rejected-static" and "python-candidate" in result.reason
    # with the static check off the harness still refuses it: torch runs only where the task says so
    result = evaluate(VECTOR_ADD, candidate=path, options=Options(static=False))
    assert result.status == "rejected-static" and "does not allow torch" in result.reason


def test_shapes_come_back_from_the_launchers_scalars():
    spec = load_task(OPS / "max_pooling_2d" / "torch_fp32.task.yaml")
    assert torch_launcher.tensor_shapes(spec, {"P": 3, "H": 9, "W": 6}) == {"x": (3, 9, 6), "y": (3, 4, 3)}


def test_a_size_symbol_that_is_no_scalar_cannot_be_bound(tmp_path):
    spec = load_task(_torch_task(tmp_path, ADD))
    hidden = spec.raw | {"args": [a if a["name"] != "n" else {**a, "value": "n * 1"} for a in spec.raw["args"]]}
    from skillbase.task.spec import spec_from_dict

    other = spec_from_dict(hidden, spec.path, check_launcher=False)
    with pytest.raises(LoadError, match="needs every size symbol as a launcher scalar; n is not one"):
        torch_launcher.symbol_arguments(other)


def test_the_warm_up_runs_on_the_tasks_own_kind_of_inputs():
    """Valid sparse structures (arbitrary indices could send a gather out of bounds on the GPU), the
    spec's shapes and dtypes, outputs left empty; the implementation runs on them."""
    spec = load_task(OPS / "spmm_csc" / "torch_bf16.task.yaml")
    scalars = spec.resolve("irregular").scalars
    tensors = torch_launcher.warm_up_tensors(spec, scalars, device="cpu")
    colptr, rowind = tensors["colptr"], tensors["rowind"]
    assert colptr[0] == 0 and colptr[-1] == rowind.numel() and bool((colptr.diff() >= 0).all())
    assert 0 <= int(rowind.min()) and int(rowind.max()) < scalars["M"]
    assert tensors["vals"].dtype == torch.bfloat16 and tuple(tensors["C"].shape) == (scalars["M"], scalars["Nc"])
    module_spec = importlib.util.spec_from_file_location("warm_spmm_csc", spec.kernel_path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    module.spmm_csc(*[tensors[a.name] if a.pointer else scalars[a.name] for a in spec.args])
    assert torch.isfinite(tensors["C"].float()).all()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal of a CPU-only torch build")
def test_a_cpu_only_torch_cannot_load_a_gpu_implementation():
    spec = load_task(OPS / "relu" / "torch_fp32.task.yaml")
    with pytest.raises(LoadError, match="has no CUDA"):
        torch_launcher.TorchLauncher(spec.kernel_path, spec, "candidate")


def test_a_missing_torch_is_one_line(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert torch_launcher.torch_missing() == "PyTorch is not installed (pip install torch)"


# -- every bench torch_impl.py on CPU torch ------------------------------------------------------------

TORCH_SPECS = sorted(OPS.glob("*/torch_*.task.yaml"))
# CPU torch (MKL) has no BF16 sparse-dense products; the CUDA build's cuSPARSE has them.
CPU_UNSUPPORTED = {("spmv_csr", "bf16"), ("spmm_csr", "bf16")}


def _run_on_cpu(spec_path: Path, preset: str, seed: int):
    spec = load_task(spec_path)
    module_spec = importlib.util.spec_from_file_location(f"bench_torch_{spec_path.parent.name}", spec.kernel_path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    resolved = spec.resolve(preset)
    host = spec.make_inputs(preset, seed)
    tensors, values = {}, []
    for a in spec.args:
        if not a.pointer:
            values.append(resolved.scalars[a.name])
            continue
        shape = resolved.arg(a.name).shape
        if a.name in host:
            array = np.ascontiguousarray(host[a.name]).reshape(shape)
            tensor = torch.from_numpy(array.view(np.int16) if a.dtype == "bf16" else array).clone()
            tensor = tensor.view(torch.bfloat16) if a.dtype == "bf16" else tensor
        else:   # outputs and scratch start poisoned (NaN), as the harness poisons them
            dtype = {"f32": torch.float32, "bf16": torch.bfloat16, "i32": torch.int32}[a.dtype]
            tensor = torch.full(shape, float("nan") if dtype.is_floating_point else -7, dtype=dtype)
        tensors[a.name] = tensor
        values.append(tensor)
    getattr(module, spec.launcher)(*values)
    return spec, host, tensors


@pytest.mark.parametrize("spec_path", TORCH_SPECS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_torch_implementation_writes_every_output_on_cpu(spec_path):
    dtype = spec_path.name.split(".")[0].split("_")[-1]
    if (spec_path.parent.name, dtype) in CPU_UNSUPPORTED:
        pytest.skip("CPU torch has no BF16 sparse-dense product (the GPU build does)")
    spec, _, tensors = _run_on_cpu(spec_path, "irregular", seed=7)
    for a in spec.outputs:
        assert torch.isfinite(tensors[a.name].float()).all(), f"{a.name} has NaN/Inf (not written?)"


def _f32(spec_path: Path, preset: str = "irregular"):
    spec, host, tensors = _run_on_cpu(spec_path, preset, seed=int(np.random.default_rng().integers(1 << 30)))
    return host, {k: v.numpy() for k, v in tensors.items()}, spec.resolve(preset)


def test_cpu_results_match_numpy_for_a_sample_of_operators():
    """A few operators against numpy on fresh inputs: the files compute what the tasks say."""
    host, out, r = _f32(OPS / "softmax" / "torch_fp32.task.yaml")
    x = host["x"].reshape(r.arg("x").shape).astype(np.float64)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out["y"], e / e.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)

    host, out, r = _f32(OPS / "matrix_transpose" / "torch_fp32.task.yaml")
    assert np.array_equal(out["B"], host["A"].reshape(r.arg("A").shape).T)

    host, out, r = _f32(OPS / "top_k" / "torch_fp32.task.yaml")
    x = host["x"].reshape(r.arg("x").shape)
    assert np.array_equal(out["values"], -np.sort(-x, axis=1)[:, :r.scalars["K"]])

    host, out, r = _f32(OPS / "conv_1d" / "torch_fp32.task.yaml")
    k = r.scalars["K"]
    padded = np.pad(host["x"].astype(np.float64), k // 2)
    expected = np.array([padded[i:i + k] @ host["w"] for i in range(r.scalars["n"])])
    np.testing.assert_allclose(out["y"], expected, rtol=1e-4, atol=1e-5)

    host, out, r = _f32(OPS / "max_pooling_2d" / "torch_fp32.task.yaml")
    x = host["x"].reshape(r.arg("x").shape)
    p, h, w = x.shape
    expected = x[:, :h // 2 * 2, :w // 2 * 2].reshape(p, h // 2, 2, w // 2, 2).max(axis=(2, 4))
    assert np.array_equal(out["y"], expected)

    host, out, r = _f32(OPS / "spmv_ell" / "torch_fp32.task.yaml")
    colind, vals = host["colind"].reshape(r.arg("colind").shape), host["vals"].reshape(r.arg("vals").shape)
    expected = np.where(colind >= 0, vals.astype(np.float64) * host["x"][np.maximum(colind, 0)], 0).sum(0)
    np.testing.assert_allclose(out["y"], expected, rtol=1e-4, atol=1e-5)

    for fmt in ("coo", "csc"):
        host, out, r = _f32(OPS / f"spmv_{fmt}" / "torch_fp32.task.yaml")
        m = r.scalars["M"]
        if fmt == "coo":
            rows, cols = host["rows"], host["cols"]
        else:
            rows, cols = host["rowind"], np.repeat(np.arange(m), np.diff(host["colptr"]))
        expected = np.zeros(m)
        np.add.at(expected, rows, host["vals"].astype(np.float64) * host["x"][cols])
        np.testing.assert_allclose(out["y"], expected, rtol=1e-4, atol=1e-5)

    host, out, r = _f32(OPS / "cross_entropy_loss" / "torch_fp32.task.yaml")
    logits = host["logits"].reshape(r.arg("logits").shape).astype(np.float64)
    labels = host["labels"] % r.scalars["C"]
    m = logits.max(1)
    rows = np.log(np.exp(logits - m[:, None]).sum(1)) + m - logits[np.arange(len(labels)), labels]
    np.testing.assert_allclose(out["out"], [rows.mean()], rtol=1e-4)
