"""Running the bench on GPUs: jobs, the executor that runs them, and `run_bench`, the entry point.

A `BenchJob` is one harness evaluation on one GPU: verify a kernel (every scored size plus the
irregular one) and time it at some presets, interleaved with a baseline kernel when it has one.
It names files only, so any executor can ship it to any GPU; `measure(job)` runs it where it
lands and returns the results as JSON dicts (one `SizeResult` per preset); `BenchJob.as_job()` is
the same work as a `skillbase.harness.jobs.Job`. An `Executor` runs a list of jobs and reports each
result as it arrives: `HarnessExecutor` runs them through any of the harness's job executors, and
`LocalExecutor` is it on this host's GPUs (in-process on one GPU, else one spawned worker process per
GPU, or `workers_per_gpu` per GPU, taking jobs from a shared queue); `run_bench(executor_kind="ray")`
uses a Ray cluster (`skillbase.harness.ray_executor`: each job carries its task folder, the driver
writes the results).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from skillbase import __version__
from skillbase.bench.report import save_results
from skillbase.bench.results import VERIFIED, SizeResult, gpu_slug, results_dir, scores
from skillbase.bench.suite import Implementation, discover, select
from skillbase.errors import EnvironmentProblem, InputError
from skillbase.harness import env
from skillbase.harness import jobs as gpu_jobs
from skillbase.harness.executors import make_executor
from skillbase.harness.jobs import MAX_WORKERS_PER_GPU, JobResult

__all__ = ["STATUS", "BenchJob", "BenchRun", "Executor", "HarnessExecutor", "LocalExecutor",
           "check_workers_per_gpu", "jobs_for", "measure", "measure_payload", "run_bench", "visible_devices"]

# Harness CheckResult status -> bench result status (everything but ok is a failure; unknown ones are errors).
STATUS = {"ok": VERIFIED, "incorrect": "incorrect", "spec-error": "incorrect", "build-failed": "build-failed",
          "load-failed": "build-failed", "crashed": "crashed", "timeout": "timeout",
          "rejected-static": "rejected-static", "quarantined": "quarantined"}


@dataclass(frozen=True)
class BenchJob:
    """Verify `candidate` under the spec of `task` and time it at `presets`, interleaved with
    `baseline` (timed under its own spec); without a candidate, verify and time `baseline` alone.

    `op`, `dtype` and `impl` label the results; `spec` is the task spec whose work model (flops,
    bytes per preset) the results carry."""

    op: str
    dtype: str
    impl: str
    presets: tuple[str, ...]
    spec: Path
    baseline: Path
    task: Path | None = None          # the kernel whose spec verifies the candidate (with a candidate)
    candidate: Path | None = None     # None: time the baseline alone
    torch_compile: bool = False       # a PyTorch candidate (torch_impl.py) runs through torch.compile
    library: str | None = None        # the vendor library (or torch) the results are labelled with

    @classmethod
    def of(cls, impl: Implementation, presets: tuple[str, ...]) -> BenchJob:
        """The job of one suite implementation: a baseline alone; a vendor kernel under its own task
        (spec beside it); a best kernel under the baseline's task. The operator's baseline is timed
        interleaved, under its own spec, with either."""
        if impl.kind == "baseline":
            return cls(impl.op, impl.dtype, impl.name, tuple(presets), impl.spec_path, impl.baseline_path)
        # A vendor kernel or a PyTorch implementation runs under its own task (it allows the library).
        own_task = {"vendor": impl.cu_path, "torch": impl.spec_path, "torch_compile": impl.spec_path}
        task = own_task.get(impl.kind, impl.baseline_path)
        return cls(impl.op, impl.dtype, impl.name, tuple(presets), impl.spec_path, impl.baseline_path,
                   task=task, candidate=impl.cu_path, torch_compile=impl.kind == "torch_compile",
                   library=impl.library)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "dtype": self.dtype, "impl": self.impl, "presets": list(self.presets),
                "spec": str(self.spec), "baseline": str(self.baseline),
                "task": str(self.task) if self.task else None,
                "candidate": str(self.candidate) if self.candidate else None,
                "torch_compile": self.torch_compile, "library": self.library}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BenchJob:
        return cls(data["op"], data["dtype"], data["impl"], tuple(data["presets"]), Path(data["spec"]),
                   Path(data["baseline"]), task=Path(data["task"]) if data.get("task") else None,
                   candidate=Path(data["candidate"]) if data.get("candidate") else None,
                   torch_compile=bool(data.get("torch_compile")), library=data.get("library"))

    def as_job(self) -> gpu_jobs.Job:
        """This measurement as a GPU job any executor can run (`measure_payload` where it lands). Its
        paths are absolute and its `folders` are the task folders they are in (shipped to a Ray node)."""
        paths = {key: Path(value).resolve() if value else None
                 for key, value in (("spec", self.spec), ("baseline", self.baseline), ("task", self.task),
                                    ("candidate", self.candidate))}
        absolute = replace(self, **{key: path for key, path in paths.items() if path is not None})
        return gpu_jobs.Job("bench-measure", "skillbase.bench.runner:measure_payload", absolute.to_json(),
                            label=f"{self.op} {self.impl}", folders=gpu_jobs.folders_of(*paths.values()))

    def failure(self, preset: str, reason: str) -> SizeResult:
        """The `error` result of a preset this job could not measure."""
        return SizeResult(op=self.op, dtype=self.dtype, impl=self.impl, preset=preset, status="error", reason=reason)


def jobs_for(impls: list[Implementation], presets: Sequence[str] = ()) -> list[BenchJob]:
    """One job per implementation, timing all its presets (default: its spec's scored ones) in one
    harness evaluation: verification then runs once per implementation, not once per size."""
    from skillbase.task import load_task

    jobs = []
    for impl in impls:
        spec = load_task(impl.spec_path)
        wanted = tuple(presets or spec.scored)
        for preset in wanted:
            if preset not in spec.presets:
                raise InputError(f"{impl.op}: no preset {preset} (presets: {', '.join(spec.presets)})")
        jobs.append(BenchJob.of(impl, wanted))
    return jobs


def measure(job: BenchJob) -> list[dict[str, Any]]:
    """Run one job on this process's GPU; one SizeResult (as a dict) per preset.

    Everything the harness needs comes from the task specs: a vendor kernel's spec names the
    libraries to link, its setup/teardown hooks, the library it may call and the baseline kernel
    as its reference; the baseline is timed under its own spec (no ad-hoc flags)."""
    from skillbase.harness.runtime import Options, evaluate
    from skillbase.task import load_task

    spec = load_task(job.spec)
    bases = []
    for preset in job.presets:
        flops, nbytes = spec.work(preset)
        bases.append(dict(op=job.op, dtype=job.dtype, impl=job.impl, preset=preset, flops=float(flops),
                          bytes=float(nbytes), library=job.library))
    missing = library_missing(spec, job.candidate)
    if missing:
        return [SizeResult(**b, status="skipped", reason=missing).to_dict() for b in bases]
    try:
        options = Options(presets=tuple(job.presets), torch_compile=job.torch_compile)
        if job.candidate is None:
            result = evaluate(job.baseline, options=options)
        else:
            result = evaluate(job.task, candidate=job.candidate, baseline=job.baseline, options=options,
                              baseline_task=job.baseline)
    except Exception as error:  # the bench's worker boundary: a job's failure is its result, never the end of the run
        return [SizeResult(**b, status="error", reason=f"{type(error).__name__}: {error}"[:500]).to_dict()
                for b in bases]
    timings = {t.size: t for t in result.timings}
    out = []
    for b in bases:
        t = timings.get(b["preset"])
        cand = t.kernels.get("candidate") if t else None
        base = t.kernels.get("baseline") if t else None
        status = STATUS.get(result.status, "error")
        reason = result.reason or ""
        if result.status == "quarantined":       # only the sizes that looked impossible are quarantined
            status = "quarantined" if cand is not None and cand.suspicious else VERIFIED
            reason = cand.suspicious if cand is not None and cand.suspicious else ""
        if cand is None or cand.stats is None:
            if status == VERIFIED:
                status, reason = "error", "no timing at this size"
            out.append(SizeResult(**b, status=status, reason=reason))
            continue
        runtime = cand.stats.median_us
        baseline = base.stats.median_us if base is not None and base.stats else (runtime if job.candidate is None
                                                                                    else None)
        spreads = [k.stats.rel_spread for k in (cand, base) if k is not None and k.stats]
        out.append(SizeResult(**b, status=status, runtime_us=runtime, baseline_us=baseline,
                              spread=max(spreads) if spreads else None, floor_us=cand.floor_us,
                              cold_l2=cand.cold_l2, reason=reason))
    if out and result.phases_s:
        out[-1].phases_s = {phase: round(seconds, 2) for phase, seconds in result.phases_s.items()}
    return [r.to_dict() for r in out]


def measure_payload(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """`measure` of a job shipped as JSON (the GPU job's function)."""
    return measure(BenchJob.from_json(payload))


def library_missing(spec, candidate: Path | None) -> str | None:
    """Why this machine cannot run the implementation (PyTorch or cuDNN absent), in one line; None when it can.
    Such an implementation is `skipped` with that reason, never a failure of the suite."""
    from skillbase.harness.torch_launcher import torch_missing

    if candidate is not None and Path(candidate).suffix == ".py":
        return torch_missing()
    if "cudnn" in spec.link:
        from skillbase.harness.build import link_flags

        folders = [Path(flag[2:]) for flag in link_flags(spec.link)[0] if flag.startswith("-I")]
        folders += [Path(p) for p in ("/usr/include", "/usr/include/x86_64-linux-gnu", "/usr/local/cuda/include")]
        nvcc = shutil.which("nvcc")
        if nvcc:
            folders.append(Path(nvcc).resolve().parent.parent / "include")
        if not any((folder / "cudnn.h").is_file() for folder in folders):
            return "cuDNN is not installed (no cudnn.h; set SKILLBASE_VENDOR_INCLUDE / SKILLBASE_VENDOR_LIB)"
    return None


# -- executors -------------------------------------------------------------------------------------

class Executor(Protocol):
    def run(self, jobs: Sequence[BenchJob], on_result: Callable[[SizeResult], None]) -> list[SizeResult]:
        """Run every job, call `on_result` with each result as it arrives, return them all in job order."""
        ...


def check_workers_per_gpu(workers_per_gpu: int, executor_kind: str = "local") -> None:
    """Several workers per GPU are the local executor's (1 to `MAX_WORKERS_PER_GPU`); a Ray cluster
    places each job on a GPU of its own."""
    if executor_kind != "local" and workers_per_gpu != 1:
        raise InputError("--workers-per-gpu starts workers on this machine's GPUs; with --executor ray the cluster "
                         "places each job", hint="drop --workers-per-gpu")
    if not 1 <= workers_per_gpu <= MAX_WORKERS_PER_GPU:
        raise InputError(f"--workers-per-gpu {workers_per_gpu}: expected 1 to {MAX_WORKERS_PER_GPU}")


def visible_devices(gpu_ids: Sequence[str], found: int | None = None, workers_per_gpu: int = 1) -> list[str]:
    """--gpus indices as CUDA_VISIBLE_DEVICES values, one per worker: relative to an existing
    CUDA_VISIBLE_DEVICES (so `CUDA_VISIBLE_DEVICES=1 skillbase bench run` runs on GPU 1, not on 0);
    none given: every GPU this process may use (`found`: how many nvidia-smi listed, when the caller
    asked it already). Each GPU is listed `workers_per_gpu` times (the local executor starts a worker
    per entry); a GPU named twice in `gpu_ids` is refused: --workers-per-gpu is the one way to say it."""
    check_workers_per_gpu(workers_per_gpu)
    twice = next((g for g in gpu_ids if list(gpu_ids).count(g) > 1), None)
    if twice is not None:
        raise InputError(f"--gpus names GPU {twice} twice ({','.join(gpu_ids)})",
                         hint="name each GPU once; --workers-per-gpu N runs N workers on each")
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if not gpu_ids:
        gpu_ids = [str(i) for i in range(len(visible) or (len(env.gpus()) if found is None else found))]
    out = []
    for g in gpu_ids:
        if visible and g.isdigit():
            if int(g) >= len(visible):
                raise InputError(f"--gpus {g}: only {len(visible)} GPU(s) visible "
                                 f"(CUDA_VISIBLE_DEVICES={','.join(visible)})")
            out.append(visible[int(g)])
        else:
            out.append(g)
    return [device for device in out for _ in range(workers_per_gpu)]


class HarnessExecutor:
    """Bench jobs through one of `skillbase.harness.jobs`'s executors (local or Ray): each job's
    SizeResults, a job that failed as an `error` result at each of its presets."""

    def __init__(self, jobs_executor: gpu_jobs.Executor):
        self.jobs_executor = jobs_executor

    def run(self, jobs: Sequence[BenchJob], on_result: Callable[[SizeResult], None]) -> list[SizeResult]:
        by_job: dict[int, list[SizeResult]] = {}

        def arrived(done: JobResult) -> None:
            job = jobs[done.index]
            if done.error is not None:
                measured = [job.failure(preset, done.error) for preset in job.presets]
            else:
                measured = [SizeResult.from_dict(d) for d in done.value]
            for result in measured:
                result.device = done.device
                on_result(result)
            by_job[done.index] = measured

        self.jobs_executor.run([job.as_job() for job in jobs], arrived)
        return [r for i in sorted(by_job) for r in by_job[i]]


class LocalExecutor(HarnessExecutor):
    """This host's GPUs (`gpu_ids`, CUDA_VISIBLE_DEVICES values), through `skillbase.harness.jobs`:
    in-process on one, else one spawned worker process per entry (a GPU listed N times: N workers on it,
    `visible_devices`) taking jobs from a shared queue."""

    def __init__(self, gpu_ids: Sequence[str]):
        self.gpu_ids = list(gpu_ids)
        super().__init__(gpu_jobs.LocalExecutor(self.gpu_ids))


# -- the entry point -------------------------------------------------------------------------------

@dataclass
class BenchRun:
    gpu: str                    # the GPU model's name (nvidia-smi)
    path: Path                  # the results.json the results were merged into
    results: list[SizeResult]   # this run's results, in job order

    @property
    def scores(self) -> dict:
        return scores(self.results, gpu=gpu_slug(self.gpu))

    def to_json(self) -> dict:
        """`bench run --json`: where the results went and their scores."""
        from skillbase.documents import versioned

        return versioned("bench-run", {"results": str(self.path), "scores": self.scores})


def run_bench(ops: Sequence[str] = (), dtype: str | None = None, impl: str = "baseline",
              gpus: Sequence[str] = (), presets: Sequence[str] = (), suite: Path | None = None,
              results: Path | None = None, *, executor: Executor | None = None, executor_kind: str = "local",
              address: str | None = None, progress: Callable[[SizeResult, int, int], None] | None = None,
              workers_per_gpu: int = 1) -> BenchRun:
    """Verify and time the chosen implementations of the suite on GPUs.

    `ops` (default: all), `dtype` (default: both), `impl` baseline | vendor | best, `presets`
    (default: each task's scored presets), `gpus` (indices relative to CUDA_VISIBLE_DEVICES, default every GPU;
    the default executor runs `workers_per_gpu` workers per GPU, default one: see `visible_devices`), `suite`
    (default: the shipped suite), `results` (default: `skillbase.config.bench_results_root()`). Each result
    is merged into `<results>/<gpu-slug>/bench/results.json` as it arrives (an interrupted run keeps what it
    measured) and the README.md beside it is rewritten; `progress(result, done, total)` sees each.
    The input is checked before the GPU: an unknown operator or preset is an InputError, a machine
    without a GPU an EnvironmentProblem. `executor_kind="ray"` runs the jobs on the Ray cluster at
    `address` (default: a Ray instance on this host), checked before any job; the results are labelled
    with its one GPU model and written here, by this process."""
    check_workers_per_gpu(workers_per_gpu, executor_kind if executor is None else "local")
    impls = select(discover(suite), list(ops), dtype, impl)
    if not impls:
        raise InputError("nothing to run for that selection", hint="see `skillbase bench list`")
    jobs = jobs_for(impls, presets)
    cluster = None
    if executor is None and executor_kind != "local":
        cluster = make_executor(executor_kind, address=address)
        if cluster.gpu_model is None:
            cluster.close()
            raise EnvironmentProblem("no node of the Ray cluster could name its GPU (nvidia-smi found none)",
                                     hint="the results are filed by GPU model: check the nodes' NVIDIA driver")
        gpu, executor = cluster.gpu_model, HarnessExecutor(cluster)
    else:
        if address:
            raise InputError("--address names a Ray cluster", hint="add --executor ray")
        found = env.require_gpus(hint="run `skillbase bench run` on a GPU machine; `bench list` and "
                                      "`bench report` work anywhere")
        gpu = found[0].name
        executor = executor or LocalExecutor(visible_devices(list(gpus), len(found), workers_per_gpu))
    meta = {"skillbase": __version__, "git": env.git_revision()}
    total = sum(len(job.presets) for job in jobs)
    done: list[SizeResult] = []

    def record(result: SizeResult) -> None:
        done.append(result)
        save_results(gpu, [result], meta, results)
        if progress is not None:
            progress(result, len(done), total)

    try:
        measured = executor.run(jobs, record)
    finally:
        if cluster is not None:
            cluster.close()
    return BenchRun(gpu, results_dir(gpu, results) / "results.json", measured)
