"""Where a KernelBench member's input and reference time goes (issue 20), on the GPU machine.

    python tools/measure/kb_member_probe.py TASK.yaml [--repeat 2]

Times, for one imported task at its `default` size, the steps a judgement repeats per verification case:
the problem's inputs (`make_inputs`, the adapter's hook), their upload, and the python reference, each
under cProfile (the 12 costliest calls by cumulative time), so the fix lands on the measured cause.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time


def profiled(label: str, fn):
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    value = fn()
    profile.disable()
    print(f"== {label}: {time.perf_counter() - started:.2f} s")
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(12)
    print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:4000])
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    from skillbase.task import load_task

    spec = load_task(args.task, check_launcher=False)
    sizes = spec.sizes_for("default")
    import cupy
    import numpy as np

    reference = spec.reference_callable()

    def upload(host):
        arrays = [cupy.asarray(np.ascontiguousarray(a).reshape(-1)) for a in host.values()]
        cupy.cuda.runtime.deviceSynchronize()
        return arrays

    for seed in range(args.repeat):
        host = profiled(f"make_inputs seed {seed}", lambda seed=seed: spec.make_inputs(sizes, seed))
        print("   inputs:", {k: (v.shape, str(v.dtype), f"{v.nbytes / 1e9:.2f} GB") for k, v in host.items()})
        profiled("upload", lambda host=host: upload(host))
        profiled("reference", lambda host=host: reference({k: v.copy() for k, v in host.items()}, dict(sizes)))

if __name__ == "__main__":
    main()
