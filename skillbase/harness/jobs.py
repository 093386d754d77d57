"""GPU jobs and the executors that run them: one place for "run this on one GPU".

A `Job` is one unit of GPU work with a JSON payload: measure a bench implementation
(`skillbase.bench.runner:measure_payload`), start or advance one optimization run of a batch
(`skillbase.run.batch:start_payload`, `advance_payload`: judge its candidate, profile the new best,
time a baseline). It names the function that runs it as `module:function`, so any executor can
ship it to any process or machine and call it there; the function takes the payload and returns
a JSON-serialisable value. An `Executor` runs a list of jobs and reports each `JobResult` as it
arrives. `LocalExecutor` runs them on this host: in-process on one GPU (or without any), else one
spawned worker process per entry of its GPU list (CUDA_VISIBLE_DEVICES set before anything
initialises CUDA) taking jobs from a shared queue. A GPU listed once runs one job at a time; listed
N times (`--workers-per-gpu N`) it runs N jobs side by side: their loading, input drawing, reference
and compiling overlap, while the harness's per-GPU lock (`harness.gpu_lock`) keeps every timed
phase, cheat probe and profiled run alone on the GPU, whoever's process it is. `RayExecutor`
(`skillbase.harness.ray_executor`, the `ray` extra) is another implementation of the same protocol
around the same `run_job`: `skillbase.harness.executors.make_executor` picks one. A job names the local `folders` it
reads (shipped to a node that lacks them). An executor says whether it is `remote`: its jobs then
cannot reach this host's files, and a batch ships each run a private copy of its store
(`skillbase.run.transfer`); the local executor's jobs write the store themselves, as before.
`python -m skillbase.harness.jobs JOB.json RESULT.json` runs one job in a process of its own (what a
Ray task starts, so a crash costs that job and not the Ray worker).
"""

from __future__ import annotations

import ctypes
import importlib
import json
import multiprocessing as mp
import os
import queue
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from skillbase.errors import EnvironmentProblem
from skillbase.harness.phases import collecting

__all__ = ["MAX_WORKERS_PER_GPU", "NOT_STARTED", "Executor", "Job", "JobResult", "LocalExecutor", "TimeBudget",
           "collect", "describe_error", "folders_of", "interrupted", "interruption", "not_started", "run_job"]

# --workers-per-gpu's bound: past a few, the workers mostly wait for each other's exclusive phases (and
# each holds its job's buffers in the GPU's memory).
MAX_WORKERS_PER_GPU = 8


@dataclass(frozen=True)
class Job:
    kind: str                          # what it does, for progress and errors: bench-measure, advance-run ...
    function: str                      # module:function that runs it, importable in any worker
    payload: dict[str, Any] = field(default_factory=dict)
    label: str = ""                    # who it is about: an operator, a run
    # Absolute folders the job reads (a task's folder): an executor on another machine ships a copy of
    # each and rewrites the payload's paths under them (what the job writes there stays in the copy).
    folders: tuple[str, ...] = ()
    # Seconds this job is known to take from its own history (a run's longest judging so far), which
    # `TimeBudget` prefers to its kind's longest; None: nothing known beyond its kind.
    estimate_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "function": self.function, "payload": self.payload, "label": self.label,
                "folders": list(self.folders), "estimate_s": self.estimate_s}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Job:
        return cls(kind=data["kind"], function=data["function"], payload=data.get("payload") or {},
                   label=data.get("label", ""), folders=tuple(data.get("folders") or ()),
                   estimate_s=data.get("estimate_s"))


@dataclass
class JobResult:
    index: int                         # the job's place in the list handed to the executor
    job: Job
    device: str | None                 # the CUDA_VISIBLE_DEVICES value it ran under (None: no GPU)
    value: Any = None                  # what the job's function returned
    error: str | None = None           # why it returned nothing (an exception, a dead worker)
    wall_s: float | None = None        # how long it ran (None: it did not run)
    phases_s: dict[str, float] = field(default_factory=dict)   # where that time went (harness.phases)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "job": self.job.to_json(), "device": self.device, "value": self.value,
                "error": self.error, "wall_s": self.wall_s, "phases_s": self.phases_s}


def folders_of(*paths: str | Path | None) -> tuple[str, ...]:
    """The distinct absolute folders holding `paths`: a job's `folders`."""
    return tuple(dict.fromkeys(str(Path(p).resolve().parent) for p in paths if p))


def run_job(job: Job) -> Any:
    """Call the job's function with its payload, in this process."""
    module, _, name = job.function.partition(":")
    return getattr(importlib.import_module(module), name)(job.payload)


class Executor(Protocol):
    remote: bool     # whether its jobs run where this host's files are out of reach (another machine)

    def run(self, jobs: Sequence[Job], on_result: Callable[[JobResult], None]) -> list[JobResult]:
        """Run every job, call `on_result` with each result as it arrives, return them all in job order."""
        ...


def _attempt(index: int, job: Job, device: str | None, clock: Callable[[], float] = time.monotonic) -> JobResult:
    # The one call site of a job on its GPU. The harness's workers take `harness.gpu_lock` themselves
    # (shared to verify, exclusive to time), so a job here never times beside another process's work.
    started = clock()
    with collecting() as phases:     # what the harness measured during the job (its worker phases, nvcc, ncu)
        try:
            result = JobResult(index, job, device, value=run_job(job))
        except Exception as error:  # the executor's boundary: a job's failure is its result, never the end of the batch
            result = JobResult(index, job, device, error=describe_error(error))
    result.wall_s, result.phases_s = round(clock() - started, 3), dict(phases)
    return result


def describe_error(error: Exception) -> str:
    """A job's failure as its result says it (a missing tool or device, or one that ran out: `interruption`)."""
    if isinstance(error, EnvironmentProblem):
        return interruption(str(error))[:500]
    return f"{type(error).__name__}: {error}"[:500]


INTERRUPTED = "interrupted: "


def interruption(reason: str) -> str:
    """The error of a job the machine stopped (out of device memory, no GPU, a worker process that
    died), not its own failure: nothing was decided, and running the job again is the remedy."""
    return INTERRUPTED + reason


def interrupted(error: str | None) -> bool:
    """Whether a result's error is an `interruption`."""
    return bool(error) and error.startswith(INTERRUPTED)


NOT_STARTED = "not started: the time limit was reached (run again to continue)"
# What a job of each kind is expected to take before one has run in this command (seconds): a
# KernelBench judgement on an H200 took 33-218 s, a plain task's a few seconds to a minute.
DEFAULT_ESTIMATE_S = {"advance-run": 60.0, "start-run": 60.0, "pytorch-baselines": 60.0}
# A job's own history is from another command, perhaps with fewer neighbours on its GPU: this much more.
OWN_HISTORY_MARGIN = 1.5
WHAT = {"advance-run": "a judgement", "start-run": "a run's start", "bench-measure": "a measurement",
        "pytorch-baselines": "a PyTorch eager or torch.compile timing"}


def not_started(error: str | None) -> bool:
    """Whether a result's error says the job never started (the time limit), so it can run later."""
    return bool(error) and error.startswith("not started: ")


class TimeBudget:
    """The one rule for starting a job under a time limit: not after the deadline, and not when the
    time left is shorter than what the job is expected to take: the longest job of the same kind seen
    so far (or, before any, its `DEFAULT_ESTIMATE_S`), unless the job carries its own history
    (`estimate_s`, its task's longest earlier judgement). A longer history rules (a run whose earlier
    judgements took 400 s is not started with 100 s left because this command's first judgements were
    short); a shorter one rules with `OWN_HISTORY_MARGIN` for neighbours it did not have then, up to the
    kind's figure (in a batch of mixed sizes the slowest task's 240 s must not hold back a task that
    takes 30 s). A job started past that would overrun the limit the caller set. Each job is
    judged on its own, so the rule holds however many run at once: with several workers on one GPU
    a job's measured wall time includes its waits for the neighbours' exclusive phases, and that
    longer figure is what the next job must fit."""

    def __init__(self, deadline: float | None, clock: Callable[[], float] = time.time,
                 defaults: dict[str, float] | None = None):
        self.deadline = deadline
        self.clock = clock
        self.longest = dict(DEFAULT_ESTIMATE_S if defaults is None else defaults)
        self.seen: set[str] = set()

    def refusal(self, job: Job) -> str | None:
        """Why `job` must not start now (one line, `not_started`), or None."""
        if self.deadline is None:
            return None
        left = self.deadline - self.clock()
        if left <= 0:
            return NOT_STARTED
        needed = self.longest.get(job.kind, 0.0)
        what = WHAT.get(job.kind, f"a {job.kind} job")
        took = f"{what} took up to" if job.kind in self.seen else f"{what} is expected to take"
        if job.estimate_s is not None:
            own = f"{job.label or 'this job'}'s earlier work took up to"
            if job.estimate_s >= needed:
                needed, took = job.estimate_s, own
            elif job.estimate_s * OWN_HISTORY_MARGIN < needed:
                needed = job.estimate_s * OWN_HISTORY_MARGIN
                took = f"{own} {job.estimate_s:.0f} s, so allowing"
        if left < needed:
            return f"not started: time limit: ~{left:.0f} s left, {took} {needed:.0f} s (run again to continue)"
        return None

    def ran(self, result: JobResult) -> None:
        """Learn from a job that ran: the longest of its kind, measured (replacing the default estimate)."""
        if result.wall_s is None:
            return
        kind = result.job.kind
        self.longest[kind] = max(result.wall_s, self.longest.get(kind, 0.0) if kind in self.seen else 0.0)
        self.seen.add(kind)


class LocalExecutor:
    """This host's GPUs (`gpu_ids`, CUDA_VISIBLE_DEVICES values): in-process on one (or on none: work
    that needs no GPU), else one spawned worker process per entry taking jobs from a shared queue. A
    value listed N times gets N workers on that GPU (`bench.runner.visible_devices(workers_per_gpu=N)`
    builds such lists); each holds its own job's buffers in the GPU's memory.

    With a `deadline` (a `clock()` value, default `time.time()`) a job starts only when its
    `TimeBudget` allows: the jobs running then finish, the rest come back with a `not_started` error
    (a device session's time is bounded)."""

    remote = False   # its jobs run on this host: they read and write its files (a batch's run store)

    def __init__(self, gpu_ids: Sequence[str], deadline: float | None = None, clock: Callable[[], float] = time.time):
        self.gpu_ids = list(gpu_ids)
        self.deadline = deadline
        self.clock = clock

    def close(self) -> None:
        """Nothing to release: the worker processes end with each `run`."""

    def run(self, jobs: Sequence[Job], on_result: Callable[[JobResult], None]) -> list[JobResult]:
        budget = TimeBudget(self.deadline, self.clock)
        if len(self.gpu_ids) <= 1:
            device = self.gpu_ids[0] if self.gpu_ids else None
            if device is not None:
                os.environ["CUDA_VISIBLE_DEVICES"] = device
            results = []
            for index, job in enumerate(jobs):
                refusal = budget.refusal(job)
                result = JobResult(index, job, device, error=refusal) if refusal else \
                    _attempt(index, job, device, self.clock)
                budget.ran(result)
                results.append(result)
                on_result(result)
            return results
        ctx = mp.get_context("spawn")
        tasks, done = ctx.Queue(), ctx.Queue()
        upcoming = iter(range(len(jobs)))

        def start_next() -> None:
            # This process hands out each job when a worker frees, so the budget knows every job that finished.
            for index in upcoming:
                refusal = budget.refusal(jobs[index])
                if refusal is None:
                    tasks.put((index, jobs[index].to_json()))
                    return
                done.put({"index": index, "device": None, "value": None, "error": refusal})
            tasks.put(None)     # nothing left: this worker ends

        def arrived(result: JobResult) -> None:
            budget.ran(result)
            if result.wall_s is not None:   # a worker is free again
                start_next()
            on_result(result)

        workers = [ctx.Process(target=_worker, args=(gpu, tasks, done, os.getpid()), daemon=True)
                   for gpu in self.gpu_ids]
        for worker in workers:
            worker.start()
        for _ in workers:
            start_next()
        by_index = collect(jobs, done, workers, arrived)
        for worker in workers:
            worker.join()
        return [by_index[i] for i in sorted(by_index)]


def collect(jobs: Sequence[Job], done, workers, on_result: Callable[[JobResult], None],
            poll_s: float = 5.0) -> dict[int, JobResult]:
    """Results from the workers' queue as they arrive. A worker that dies (a driver fault can take
    the process down) loses the job it held: once no worker is left alive, every job without a
    result is recorded as an error instead of waiting for it forever."""
    by_index: dict[int, JobResult] = {}
    while len(by_index) < len(jobs):
        try:
            data = done.get(timeout=poll_s)
        except queue.Empty:
            if any(w.is_alive() for w in workers):
                continue
            codes = ", ".join(str(w.exitcode) for w in workers)
            for index, job in enumerate(jobs):
                if index not in by_index:
                    by_index[index] = JobResult(index, job, None, error=interruption(
                        f"the worker process exited (exit codes {codes}) before this job ran"))
                    on_result(by_index[index])
            break
        result = JobResult(data["index"], jobs[data["index"]], data["device"], data["value"], data["error"],
                           data.get("wall_s"), data.get("phases_s") or {})
        by_index[result.index] = result
        on_result(result)
    return by_index


def _die_with_parent() -> None:
    """A worker must not outlive its parent: after a kill -9 of the batch, a `resume` must not find a
    worker still judging a run (Linux: PR_SET_PDEATHSIG; elsewhere the parent check below)."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)   # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _worker(gpu: str, tasks, done, parent: int) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu          # before anything initialises CUDA in this process
    _die_with_parent()
    while True:
        item = tasks.get()
        if item is None or os.getppid() != parent:
            return
        index, job = item
        result = _attempt(index, Job.from_json(job), gpu)
        done.put({"index": index, "device": gpu, "value": result.value, "error": result.error,
                  "wall_s": result.wall_s, "phases_s": result.phases_s})


def main(argv: Sequence[str]) -> int:
    """`python -m skillbase.harness.jobs JOB.json RESULT.json`: run one job in this process and write
    {"value", "error"} to RESULT.json (a job's failure is its result; exit 0 either way)."""
    _die_with_parent()
    job = Job.from_json(json.loads(open(argv[0]).read()))
    result = _attempt(0, job, os.environ.get("CUDA_VISIBLE_DEVICES"))
    with open(argv[1], "w") as out:
        json.dump({"value": result.value, "error": result.error, "wall_s": result.wall_s,
                   "phases_s": result.phases_s}, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
