"""Where a run's kernel stands, for the coder's prompt (issue 16): the task's timed sizes and work model,
the run's measured times, and the roofline floor they are held against.

The floor is the bench's (`skillbase.bench.results.floor_us`, what `bench optimize-report` states as
"% roofline"): the task's bytes at the GPU's datasheet DRAM bandwidth or its flops at the compute
peak, whichever is longer. Everything here is the task or a measurement, never the engine's choice,
so the engine-on and engine-off prompts carry the same figures. What is not known stays None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from skillbase.agents.appliers import Standing, TimedSize
from skillbase.bench.results import GPU_PEAKS, SizeResult, datasheet_floors, floor_us, geomean, gpu_slug
from skillbase.run.types import LoopState
from skillbase.task import TaskSpec


def standing_of(spec: TaskSpec, operator: str, preset: str | None, gpu: str | None) -> Callable[[LoopState], Standing]:
    """The run's state -> where its best kernel stands. `preset`: the size the run is timed at (None: every
    scored preset, its time their geometric mean); `operator`: the bench operator (its BF16 tensor-core
    operators have the BF16 tensor peak as their compute floor); `gpu`: the GPU's name (None: no GPU)."""
    dtypes = list(dict.fromkeys(a.dtype for a in spec.args if a.pointer))
    suite_dtype = "bf16" if "bf16" in dtypes else "fp32"
    slug = gpu_slug(gpu) if gpu else None
    timed = tuple(_timed_size(spec, name, operator, suite_dtype, slug)
                  for name in ([preset] if preset else spec.scored))
    floors = [size.floor_us for size in timed]
    unknown = ""
    if not gpu:
        unknown = "no GPU: this run is compile-only"
    elif slug not in GPU_PEAKS:
        unknown = f"no datasheet peaks known for {gpu}"
    elif None in floors:
        missing = ", ".join(size.preset for size in timed if size.floor_us is None)
        unknown = f"the task's work model gives no bytes or FLOPs at {missing}"
    base = Standing(dtype=", ".join(dtypes), timed=timed, checked=spec.scored, irregular=dict(spec.irregular),
                    gpu=gpu, sm_count=GPU_PEAKS.get(slug or "", {}).get("sm_count"),
                    floor_us=None if unknown else geomean(floors), floor_unknown=unknown)

    def standing(state: LoopState) -> Standing:
        return replace(base, baseline_us=state.baseline_us, best_us=state.best_us)
    return standing


def _timed_size(spec: TaskSpec, preset: str, operator: str, dtype: str, gpu: str | None) -> TimedSize:
    flops, nbytes = spec.work(preset)
    work = SizeResult(operator, dtype, "optimized", preset, "verified", flops=flops, bytes=nbytes)
    memory_us, compute_us = datasheet_floors(work, gpu)
    return TimedSize(preset=preset, sizes=spec.sizes_for(preset), nbytes=nbytes, flops=flops, memory_us=memory_us,
                     compute_us=compute_us, floor_us=floor_us(work, gpu))
