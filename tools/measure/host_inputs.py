"""Where a case's host-side input time goes, step by step, at a task's real size (the CPU; GPU steps given a GPU).

A worker's `inputs` phase per drawn case (harness/session.py `prepare`) is: `make_inputs` (a KernelBench task's
hook: the problem's get_inputs through torch, on the GPU when there is one, here on the CPU; a native task's
`dist:` draw: generators.dense), the x4 scaling of the scaled variant (`Session._scaled`), and the upload's host
part (`np.ascontiguousarray`, then CuPy's `asarray`, which stages the whole array through a pinned buffer: emulated
here by one copy into a fresh array; the pinned allocation and the H2D copy need the GPU and are not measured).

    python tools/measure/host_inputs.py /tmp/kb19/model.task.yaml --steps hook,scaled,upload,dense
    python tools/measure/host_inputs.py TASK --steps first-touch,hook,scaled,upload,gpu-upload,dense   # on the GPU

prints one line per step: seconds, bytes, and whether the result is a new array (a host copy). `dense` draws
the hook's arrays again through generators.dense (uniform, normal and, for an i32 copy, randint) to time our
own generator at the same size. `gpu-upload` (CuPy and a GPU) times the upload two ways; `first-touch`
writes 6 GiB of fresh memory twice. `--warm-gib` first touches that much memory, so that the steps are not timed
on the VM's first touch of fresh pages.
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from skillbase.harness.session import Session  # noqa: E402
from skillbase.task import load_task  # noqa: E402


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    seconds = time.perf_counter() - start
    return result, seconds


def show(label: str, seconds: float, nbytes: int, note: str = "") -> None:
    print(f"{label:<34} {seconds:8.2f} s  {nbytes / 2**30:6.2f} GiB  {nbytes / 2**30 / max(seconds, 1e-9):6.2f} GiB/s"
          f"  {note}", flush=True)


def dense_spec(task: Path, init: dict, dtype: str | None, where: Path):
    """The task with every hook-drawn array drawn by `init` instead (and `dtype` when given)."""
    doc = yaml.safe_load(task.read_text())
    doc.pop("reference", None)
    for arg in doc["args"]:
        if isinstance(arg.get("init"), dict) and "hook" in arg["init"]:
            arg["init"] = copy.deepcopy(init)
            if dtype:
                arg["dtype"] = dtype
    path = where / task.name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_task(path, check_launcher=False)


def _cuda() -> bool:
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_available())


def gpu_uploads(host: dict) -> None:
    """The upload itself, two ways (needs CuPy and a GPU): `cp.asarray` as `Session._upload` does (a pinned
    buffer of the whole array, the host copy into it, then the DMA), twice (the second reuses the pinned
    pool), and `cp.empty` + `.set` (a pageable cudaMemcpy, no staging copy of ours)."""
    try:
        import cupy as cp
    except ImportError:
        print("gpu-upload: skipped, no CuPy here")
        return
    for name, array in host.items():
        flat = np.ascontiguousarray(array).reshape(-1)
        for label in ("cp.asarray", "cp.asarray again"):
            device, seconds = timed(lambda a: (d := cp.asarray(a), cp.cuda.Device().synchronize(), d)[2], flat)
            show(f"{label} {name}", seconds, flat.nbytes)
            del device
        for label in ("empty + set", "empty + set again"):
            device, seconds = timed(lambda a: (d := cp.empty(a.shape, a.dtype), d.set(a),
                                               cp.cuda.Device().synchronize(), d)[3], flat)
            show(f"{label} {name}", seconds, flat.nbytes)
            del device
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", type=Path)
    parser.add_argument("--size", default="default")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", default="hook,scaled,upload,dense")
    parser.add_argument("--warm-gib", type=float, default=0.0,
                        help="touch this much memory first: in a VM the first touch of memory costs far more than "
                             "a later one (seen here: 6 GiB written in 12-28 s fresh, 0.5 s warm)")
    options = parser.parse_args()
    if options.warm_gib:
        warm = np.ones(int(options.warm_gib * 2**30), dtype=np.uint8)
        del warm
    steps = options.steps.split(",")
    print(f"cores {len(os.sched_getaffinity(0))}, numpy {np.__version__}, task {options.task}, size {options.size}")
    spec = load_task(options.task, check_launcher=False)
    sizes = spec.sizes_for(options.size)
    host = None
    if "hook" in steps:
        for label in ("", ", again"):     # the first GPU draw includes CUDA's start
            host = None
            host, seconds = timed(spec.make_inputs, sizes, options.seed)
            where = "GPU draw + copy to host" if _cuda() else "torch on the CPU"
            show(f"make_inputs (hook: {where}{label})", seconds, sum(a.nbytes for a in host.values()))
    if host is None:
        host = dense_spec(options.task, {"dist": "uniform", "low": 0, "high": 1}, None,
                          Path(tempfile.mkdtemp())).make_inputs(sizes, options.seed)
    if "scaled" in steps:
        fake = Session.__new__(Session)
        fake.spec = spec
        for name, array in host.items():
            scaled, seconds = timed(fake._scaled, name, array)
            show(f"_scaled {name}", seconds, array.nbytes, "new array" if scaled is not array else "same array")
            del scaled
            gc.collect()
    if "upload" in steps:
        for name, array in host.items():
            flat, seconds = timed(lambda a: np.ascontiguousarray(a).reshape(-1), array)
            show(f"ascontiguousarray {name}", seconds, array.nbytes,
                 "copy" if not np.shares_memory(flat, array) else "no copy")
            staged, seconds = timed(lambda a: np.copyto(np.empty_like(a), a), flat)
            show(f"staging copy {name} (CuPy's)", seconds, array.nbytes, "emulated: into a fresh array")
            del flat, staged
    if "gpu-upload" in steps:
        gpu_uploads(host)
    host = None
    gc.collect()
    if "first-touch" in steps:
        for label in ("fresh", "again"):
            _, seconds = timed(lambda n: np.ones(n, dtype=np.uint8), 6 << 30)
            show(f"first touch: 6 GiB written, {label}", seconds, 6 << 30)
    if "dense" in steps:
        where = Path(tempfile.mkdtemp())
        for init, dtype in (({"dist": "uniform", "low": 0, "high": 1}, None), ({"dist": "normal"}, None),
                            ({"dist": "randint", "low": 0, "high": 100}, "i32")):
            drawn, seconds = timed(dense_spec(options.task, init, dtype, where).make_inputs, sizes, options.seed)
            show(f"dense {init['dist']} {dtype or ''}", seconds, sum(a.nbytes for a in drawn.values()))
            del drawn
            gc.collect()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
