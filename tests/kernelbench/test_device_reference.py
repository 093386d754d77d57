"""The imported task's python reference is marked device-capable (`reference.device = True`): given
device arrays it computes on them and returns its output there, given numpy it keeps the numpy
contract. CPU: the "device" arrays are CPU arrays exchanged through DLPack, as the harness's CuPy
arrays are on a GPU; an older kb_task.py without the mark keeps the host path."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import numpy as np
import pytest

from skillbase.kernelbench.importer import import_problems
from skillbase.task import load_task

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"


class OnDevice:
    """An array as the harness hands a marked reference one: not numpy, exchanged through DLPack."""

    def __init__(self, array: np.ndarray):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def view(self, dtype):
        return OnDevice(self.array.view(dtype))


@pytest.fixture(scope="module")
def gemm(tmp_path_factory):
    out = tmp_path_factory.mktemp("kb")
    (problem,) = import_problems(FIXTURES / "level2" / "2_Gemm_Scale_ReLU.py", out).imported
    return problem.task_dir


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_is_marked_and_gives_the_same_output_on_device_arrays(gemm):
    spec = load_task(gemm / "model.task.yaml", check_launcher=False)
    reference = spec.reference_callable()
    assert reference.device is True
    inputs = spec.make_inputs("default", random.randrange(1 << 30))
    on_host = reference({k: v.copy() for k, v in inputs.items()}, spec.sizes_for("default"))["out"]
    on_device = reference({k: OnDevice(v.copy()) for k, v in inputs.items()}, spec.sizes_for("default"))["out"]
    assert isinstance(on_host, np.ndarray) and isinstance(on_device, torch.Tensor)
    assert on_device.dtype == torch.float32 and on_device.shape == (on_host.size,)
    assert np.array_equal(on_device.numpy(), on_host.reshape(-1))


def test_a_device_bf16_array_is_read_as_bf16_bits(gemm):
    module = _module(gemm / "kb_task.py", "kb_task_bf16_under_test")
    bits = np.random.default_rng().integers(0, 1 << 16, size=257, dtype=np.uint16)
    bits[(bits & 0x7F80) == 0x7F80] = 0x3F80           # no NaN/Inf patterns: compared with ==
    from_host = module._kb_tensor(bits, "bf16", "cpu")
    from_device = module._kb_tensor(OnDevice(bits.copy()), "bf16", "cpu")
    assert from_device.dtype == torch.bfloat16 and torch.equal(from_host, from_device)


def test_an_older_kb_task_without_the_mark_keeps_the_host_path(gemm, tmp_path):
    text = (gemm / "kb_task.py").read_text()
    assert text.count("reference.device = True\n") == 1
    (tmp_path / "kb_task.py").write_text(text.replace("reference.device = True\n", ""))
    module = _module(tmp_path / "kb_task.py", "kb_task_old_under_test")
    # The session's rule (harness.session): only `device is True` sends device arrays.
    assert getattr(module.reference, "device", False) is not True
