"""Does torch.compile compile a KernelBench task's PyTorch implementation, and what does it gain? (GPU only.)

Session 25 found `kernelbench baselines` timing torch.compile within 0.1 % of eager on every member, also on
fusions where inductor should save whole passes over a GB-sized tensor (level2/4 Conv2d_Mish_Mish: 19013.1 vs
19013.6 us). This tool calls the task's launcher (`kb_task.py`) on its own inputs, outside the harness, eager and
through torch.compile, counts the graphs dynamo captured and the recompilations, and times both with CUDA events
(median of --calls); then, with --harness, through `skillbase.kernelbench.scoring.time_pytorch` (the harness path
the column comes from), with TORCH_LOGS=recompiles,graph_breaks so the worker says what dynamo did.

    python3 tools/measure/torch_compile_check.py STORE/kb_tasks/level2_4_Conv2d_Mish_Mish [--calls 10] [--harness]

After that it calls the compiled launcher at the irregular size and back three times (as verification does) and
times it again.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path


def load(folder: Path):
    spec = importlib.util.spec_from_file_location(f"kbcheck_{folder.name}", folder / "kb_task.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def arguments(module, folder: Path, size: str | None = None, device: str = "cuda"):
    """The launcher's arguments at one of the task's sizes (default: its first preset): inputs from its hook,
    empty outputs (the torch launcher's own warm-up tensors), the size scalars."""
    import numpy as np

    from skillbase.harness.torch_launcher import warm_up_tensors
    from skillbase.task import load_task

    spec = load_task(folder / "torch.task.yaml", check_launcher=False)
    sizes = dict(spec.irregular) if size == "irregular" else dict(spec.presets[size or next(iter(spec.presets))])
    scalars = spec.resolve(sizes).scalars
    tensors = warm_up_tensors(spec, scalars, device, host=module.make_inputs(sizes, np.random.default_rng(1)))
    return [tensors[a.name] if a.pointer else scalars[a.name] for a in spec.args]


def timed(fn, args, calls: int, torch) -> float:
    fn(*args)
    torch.cuda.synchronize()
    times = []
    for _ in range(calls):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000.0)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--harness", action="store_true", help="also time both through the harness")
    options = parser.parse_args()
    import torch
    import torch._dynamo.utils as dynamo_utils

    folder = options.folder.resolve()
    missing = [name for name in ("kb_task.py", "torch.task.yaml") if not (folder / name).is_file()]
    if missing:
        print(f"error: {folder}: no {' or '.join(missing)} here; give an imported KernelBench task folder "
              "(STORE/kb_tasks/<problem>, made by `skillbase kernelbench import`)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("error: no CUDA device: this tool times the task on the GPU", file=sys.stderr)
        return 2
    module = load(folder)
    args = arguments(module, folder)
    report: dict = {"task": folder.name, "torch": torch.__version__}
    report["eager_us"] = timed(module.kb_forward, args, options.calls, torch)
    graphs: list[int] = []

    def counting(gm, example_inputs):
        from torch._inductor.compile_fx import compile_fx

        graphs.append(sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")))
        return compile_fx(gm, example_inputs)

    started = time.time()
    compiled = torch.compile(module.kb_forward, backend=counting)
    report["compile_us"] = timed(compiled, args, options.calls, torch)
    report["compile_s"] = round(time.time() - started, 1)
    report["graphs_ops"] = graphs
    report["dynamo_counters"] = {k: dict(v) for k, v in dynamo_utils.counters.items() if v}
    plain = torch.compile(module.kb_forward)   # the default backend, as the harness compiles it
    report["compile_default_us"] = timed(plain, args, options.calls, torch)
    # The harness verifies at the irregular size between calls at the scored one: switch back and forth.
    irregular = arguments(module, folder, "irregular")
    for _ in range(3):
        plain(*irregular)
        plain(*args)
    torch.cuda.synchronize()
    del irregular
    report["compile_after_size_switches_us"] = timed(plain, args, options.calls, torch)
    report["dynamo_counters_after"] = {k: dict(v) for k, v in dynamo_utils.counters.items() if v}
    print(json.dumps(report, indent=1, default=str), flush=True)
    if options.harness:
        from skillbase.kernelbench.scoring import time_pytorch

        os.environ.setdefault("TORCH_LOGS", "recompiles,graph_breaks")
        print(json.dumps({"harness": time_pytorch(folder, compile=True, eager=True)}, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
