"""torch.compile through the KernelBench adapter compiles the forward pass and keeps compiling it while the harness
switches between the scored size and the irregular one (session 25: adapter 1 made dynamo recompile its bookkeeping
at every switch until the recompile limit, after which the "torch.compile" column was eager's). CPU torch and a
recording backend stand in for inductor on the GPU; tools/measure/torch_compile_check.py measures the real one.

    python -m pytest -q -p no:cacheprovider tests/kernelbench/test_compile_adapter.py
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from skillbase.harness.torch_launcher import warm_up_tensors  # noqa: E402
from skillbase.kernelbench.importer import import_problems  # noqa: E402
from skillbase.kernelbench.scoring import COMPILE_SOUND_FROM, adapter_of, compile_time  # noqa: E402
from skillbase.kernelbench.task_files import ADAPTER_VERSION  # noqa: E402
from skillbase.task import load_task  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"


def load_module(folder: Path):
    spec = importlib.util.spec_from_file_location(f"kbcompile_{folder.name}_{random.random()}", folder / "kb_task.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launcher_args(module, folder: Path, size: str, seed: int) -> list:
    """The launcher's arguments at one size: the task's own inputs from its hook, outputs full of NaN."""
    spec = load_task(folder / "torch.task.yaml", check_launcher=False)
    sizes = dict(spec.irregular) if size == "irregular" else dict(spec.presets[next(iter(spec.presets))])
    scalars = spec.resolve(sizes).scalars
    host = module.make_inputs(sizes, np.random.default_rng(seed))
    tensors = warm_up_tensors(spec, scalars, "cpu", host=host)
    for name, tensor in tensors.items():
        if name not in host:
            tensor.fill_(float("nan"))
    return [tensors[a.name] if a.pointer else scalars[a.name] for a in spec.args]


@pytest.mark.parametrize("problem", ["1_Conv2d_ReLU_BiasAdd", "2_Gemm_Scale_ReLU"])
def test_the_forward_pass_stays_compiled_across_size_switches(problem, tmp_path):
    import_problems(FIXTURES, tmp_path / "tasks", level=2, problems=(problem,))
    folder = next((tmp_path / "tasks").iterdir())
    assert adapter_of(folder) == ADAPTER_VERSION >= COMPILE_SOUND_FROM
    module = load_module(folder)
    torch._dynamo.reset()
    graphs: list[list[str]] = []

    def recording(gm, example_inputs):
        graphs.append([str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
        return gm.forward

    compiled = torch.compile(module.kb_forward, backend=recording)
    switches = 3 * torch._dynamo.config.recompile_limit          # far past the limit adapter 1 reached
    with torch._dynamo.config.patch(fail_on_recompile_limit_hit=True):   # as the torch launcher sets it
        check_calls(module, folder, compiled, switches)
    forward = [g for g in graphs if any("relu" in op for op in g)]
    assert forward, graphs                                         # the model's ops were captured, not run eager
    assert len(graphs) <= 6, graphs                               # compiled once or twice per size, then reused


def check_calls(module, folder: Path, compiled, switches: int) -> None:
    """Alternate the sizes; each compiled call's output equals eager's on the same inputs."""
    out_index = [a.name for a in load_task(folder / "torch.task.yaml", check_launcher=False).args].index("out")
    for call in range(switches):
        size = "irregular" if call % 2 else "default"
        args = launcher_args(module, folder, size, seed=random.randrange(2**31))
        compiled(*args)
        result = args[out_index].clone()
        args[out_index].fill_(float("nan"))
        module.kb_forward(*args)                                   # eager, on the same inputs
        assert not result.isnan().any()
        torch.testing.assert_close(result, args[out_index], rtol=1e-5, atol=1e-5)


def test_a_compile_time_through_adapter_1_is_eager_and_does_not_count():
    us = random.uniform(10.0, 1e4)
    assert compile_time({"eager": us, "compile": us}) == (None, compile_time({"compile": us})[1])
    stale, why = compile_time({"eager": us, "compile": us * 1.0001, "compile_adapter": 1})
    assert stale is None and "fell back to eager" in why and "--refresh" in why
    assert compile_time({"compile": us, "compile_adapter": COMPILE_SOUND_FROM}) == (us, None)
    failed = {"compile": None, "compile_reason": "crashed: x", "compile_adapter": COMPILE_SOUND_FROM}
    assert compile_time(failed) == (None, "crashed: x")
