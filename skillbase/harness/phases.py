"""Where a GPU job's time goes: wall seconds per phase, measured where the work happens.

The worker times its own phases (`load`: the task and the libraries, torch included; `inputs`: the
task's make_inputs, a hook's device-to-host copies included; `upload`: the pristine inputs copied to the device,
at every `prepare`; `reference`: the reference outputs; `verify`: the candidate's calls and the
comparisons; `timing`; `run`: a profiled run's calls) with a `Phases`, exclusively: a phase entered
inside another (inputs drawn while timing) pauses the outer one, so the phases never add up to more
than the wall time. `gpu_wait` is the time a job was blocked waiting for its GPU's lock
(`harness.gpu_lock`, taken with the job's Phases): waiting, not GPU work, and recorded only when a
request was refused at first; `memory_wait` the time it waited for room in its GPU's memory
(`harness.gpu_memory`). The host adds what it does around a worker (`compile`: nvcc; `worker`:
the worker process's start and imports, its wall time less its phases; `profile`: the ncu process,
less the profiled worker's `gpu_wait`).
`collecting()` gathers every phase recorded in this process while a job runs (`jobs._attempt`), so a
job's result says where its time went whatever path it took (a judgement, a profile, a generator's
first kernel); `judged_line` is the one-line form a batch shows per job.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator

__all__ = ["GPU_WAIT", "MEMORY_WAIT", "Phases", "collecting", "judged_line", "merge", "record"]

GPU_WAIT = "gpu_wait"     # blocked in gpu_lock: the job waited for a neighbour, it did not use the GPU
MEMORY_WAIT = "memory_wait"   # blocked in gpu_memory.reserve: the neighbours' reservations left no room


class Phases:
    """Exclusive wall seconds per phase name (`with phases("inputs"): ...`)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self.clock = clock
        self.seconds: dict[str, float] = {}
        self._open: list[list] = []      # [name, since]: the innermost phase is the one counting

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        now = self.clock()
        if self._open:
            self._count(self._open[-1], now)
        self._open.append([name, now])
        try:
            yield
        finally:
            now = self.clock()
            self._count(self._open.pop(), now)
            if self._open:
                self._open[-1][1] = now

    def _count(self, entry: list, now: float) -> None:
        self.seconds[entry[0]] = self.seconds.get(entry[0], 0.0) + (now - entry[1])
        entry[1] = now

    def carve(self, name: str, seconds: float, out_of: str) -> None:
        """Count `seconds` of phase `out_of` as `name` instead: what a child process measured inside one of
        this process's phases (the ncu-profiled worker's wait for the GPU lock is not profiling)."""
        moved = min(seconds, self.seconds.get(out_of, 0.0))
        if moved > 0:
            self.seconds[out_of] -= moved
            self.seconds[name] = self.seconds.get(name, 0.0) + moved

    def to_json(self) -> dict[str, float]:
        return {name: round(seconds, 3) for name, seconds in self.seconds.items()}


def merge(*parts: dict[str, float] | None) -> dict[str, float]:
    """Phase dicts added up by name (in first-seen order)."""
    out: dict[str, float] = {}
    for part in parts:
        for name, seconds in (part or {}).items():
            out[name] = round(out.get(name, 0.0) + float(seconds), 3)
    return out


_collector: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar("phases", default=None)


@contextlib.contextmanager
def collecting() -> Iterator[dict[str, float]]:
    """A dict that every `record` in this process fills while the block runs (one job's phases)."""
    found: dict[str, float] = {}
    token = _collector.set(found)
    try:
        yield found
    finally:
        _collector.reset(token)


def record(phases: dict[str, float] | None) -> None:
    """Add `phases` to the job being collected (nothing when none is)."""
    found = _collector.get()
    if found is not None and phases:
        found.update(merge(found, phases))


def judged_line(label: str, action: str, wall_s: float | None, phases: dict[str, float] | None) -> str:
    """`run_4: judged in 112.3 s (inputs 80.1, reference 20.4, verify 7.0, timing 3.1, profile 1.7)`;
    in the order they ran, phases under 0.05 s left out."""
    if wall_s is None:
        return f"{label}: {action}"
    shown = [f"{name} {seconds:.1f}" for name, seconds in (phases or {}).items() if seconds >= 0.05]
    detail = f" ({', '.join(shown)})" if shown else ""
    return f"{label}: {action} in {wall_s:.1f} s{detail}"
