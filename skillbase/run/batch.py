"""Batches: one optimization run per (operator, dtype) of the bench suite, advanced together.

`start_batch()` (`skillbase bench optimize`) records a batch in the store and starts its runs; with
`--agent external` each pauses at its first prompt. `resume_all()` (`skillbase resume --all`)
advances every paused run of the store in one process: the candidate each one expects
(`<candidates>/run_N.cu`, with an optional `run_N.meta.json`: model, wall_s, reply_tokens) is
judged; a missing, empty, binary, non-CUDA or stale candidate leaves its run waiting with a one-line
reason (nothing else in the batch is affected); a run killed mid-way continues from its last
finished step; members a killed `bench optimize` never started are started. A second `bench optimize`
of operators still in progress in an earlier batch with the same settings is refused (`again` starts
them anyway), so a rerun after a kill does not start duplicate runs. Every run's work is
one GPU job (`skillbase.harness.jobs`), so the runs spread over the visible GPUs, one worker per
GPU (or over a Ray cluster's GPUs, `executor_kind="ray"`: each job then works on a private copy of its
run's store and the driver applies the result, `skillbase.run.transfer`): with one worker per GPU
(the default) two runs never verify or time on one GPU at once. With `workers_per_gpu=N` (local
only) N runs share each GPU: their loading, inputs, references and compiling overlap, their timed
phases, probes and profiles still take the GPU one at a time (`harness.gpu_lock`). Before the jobs
start, every candidate present is built into the build cache by `jobs` parallel nvcc processes
(`prebuild_candidates`), exactly as its judge will build it, so the GPU jobs find cache hits; the
prebuild decides nothing (a candidate that fails to build is judged, and reported, as without it).
Everything is in the store, so a batch killed at any point is resumed by running `resume --all` again.

`start_kernelbench_batch()` (`skillbase kernelbench optimize`) is the same batch with another kind of
member: one generator run per imported KernelBench task (`optimize --from-reference`), which waits for
its first kernel (a `generator` prompt) and then goes on to the skill rounds; on a GPU each member
also records the task's PyTorch eager and torch.compile times (`kernelbench report` scores against them).
`add_missing_baselines()` (`skillbase kernelbench baselines`) adds afterwards, as GPU jobs of the same executor,
the PyTorch times a member lacks: torch.compile where its times were taken without it (`--no-compile`),
eager where its timing failed (a device out of memory beside neighbours, say).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from skillbase.agents.appliers import CoderReply
from skillbase.agents.client import ChatClient, load_config
from skillbase.agents.coder import NoCodeInReply
from skillbase.bench.runner import check_workers_per_gpu, visible_devices
from skillbase.bench.suite import discover, select
from skillbase.documents import versioned
from skillbase.errors import InputError, SkillbaseError
from skillbase.harness import env
from skillbase.harness.build import build_all
from skillbase.harness.executors import make_executor
from skillbase.harness.jobs import Executor, Job, JobResult, interrupted, not_started
from skillbase.harness.phases import GPU_WAIT, MEMORY_WAIT, judged_line
from skillbase.run.judges import judge_for
from skillbase.run.pending import (
    MAX_CANDIDATE_BYTES,
    PendingPrompt,
    candidate_source,
    judged_again,
    missing_note,
    pending_in,
    waiting_key,
)
from skillbase.run.session import generate_from_reference, other_gpu, resume_run, start_generator_run, start_run
from skillbase.run.store import BatchRow, RunStore, batch_name, parse_batch_ref, run_name
from skillbase.run.transfer import Shipment
from skillbase.run.types import MemberAction, Outcome, RunStatus, Settings, Status
from skillbase.task import load_task

__all__ = ["KERNELBENCH", "PYTORCH_STEP", "BatchOutcome", "MemberOutcome", "add_missing_baselines",
           "advance_payload", "baselines_payload", "default_jobs", "judged_attempts", "judging_s",
           "kernelbench_batches", "longest_judging_s", "missing_baselines", "prebuild_candidates", "read_candidate",
           "resume_all", "start_batch", "start_kernelbench_batch", "start_payload"]


@dataclass(frozen=True)
class MemberOutcome:
    """What one `bench optimize` / `resume --all` did to one run."""

    label: str                   # run_N, or `operator dtype` for a run that failed to start
    action: MemberAction         # what the batch did to it
    reason: str                  # the verdict, the pause, why it waits, or the error
    status: str | None = None    # the run's status afterwards
    run: str | None = None
    wall_s: float | None = None  # how long its job ran (None: no job ran)
    phases_s: dict[str, float] = field(default_factory=dict)   # where that time went (harness.phases)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class BatchOutcome:
    batch: str | None
    members: list[MemberOutcome] = field(default_factory=list)
    pending: list[PendingPrompt] = field(default_factory=list)     # what waits for a coder now

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for member in self.members:
            counts[member.action] = counts.get(member.action, 0) + 1
        return versioned("batch", {"batch": self.batch, "counts": counts,
                                   "members": [m.to_json() for m in self.members],
                                   "pending": [p.to_json() for p in self.pending]})


# -- bench optimize -------------------------------------------------------------------------------

def start_batch(settings: Settings, ops: Sequence[str] = (), dtype: str = "fp32", preset: str | None = None,
                gpu: bool = True, store_path=None, candidates: Path | None = None, suite: Path | None = None,
                gpus: Sequence[str] = (), executor: Executor | None = None,
                progress: Callable[[int, int, str], None] | None = None, time_limit_s: float | None = None,
                executor_kind: str = "local", address: str | None = None, again: bool = False,
                workers_per_gpu: int = 1) -> BatchOutcome:
    """One run per selected operator at `dtype`, recorded as a batch, each run until it pauses or ends.

    The selection and the preset are checked before anything is recorded, and so (unless `again`) is
    that no selected operator is still in progress in an earlier batch with the same settings
    (`_refuse_unfinished`: `resume --all` continues those); `candidates` is where
    the batch's candidates are expected (default `<store>/batches/batch_N/candidates`). After
    `time_limit_s` no further run starts (`resume_all` starts the rest). `executor_kind="ray"` runs
    the runs on the Ray cluster at `address` (connected and checked before anything is recorded);
    locally `gpus` (each named once) get `workers_per_gpu` workers each (`bench.runner.visible_devices`).
    `progress(done, total, line)` hears the number of runs before the first starts (done 0, no line)
    and each run as it pauses or ends (what it did)."""
    settings.check()
    impls = select(discover(suite), list(ops), dtype, "baseline")
    if not impls:
        raise InputError(f"no {dtype} baseline for that selection", hint="see `skillbase bench list`")
    if preset is not None:
        for impl in impls:
            spec = load_task(impl.spec_path)
            if preset not in spec.presets:
                raise InputError(f"{impl.op}: no preset {preset} (presets: {', '.join(spec.presets)})",
                                 hint="the bench's tasks share xs, s, m, l, xl")
    if settings.agent == "openai":
        ChatClient(load_config(model=settings.model))   # no key, no endpoint: say so once, before any run
    members = [{"operator": i.op, "dtype": i.dtype, "kernel": str(i.cu_path)} for i in impls]
    return _record_and_start({"settings": asdict(settings), "dtype": dtype, "preset": preset, "gpu": gpu},
                             members, store_path, candidates, gpu, gpus, executor, progress, time_limit_s,
                             executor_kind, address, check_unfinished=not again, workers_per_gpu=workers_per_gpu)


def _record_and_start(recorded: dict, members: list[dict], store_path, candidates, gpu: bool, gpus: Sequence[str],
                      executor: Executor | None, progress, time_limit_s: float | None, executor_kind: str,
                      address: str | None, *, check_unfinished: bool = False,
                      workers_per_gpu: int = 1) -> BatchOutcome:
    """Record a batch (its settings `recorded`, its candidates folder, its `members`) and start every member;
    `check_unfinished`: first refuse members still in progress in an earlier batch (`_refuse_unfinished`)."""
    # The GPUs (or the cluster) are checked before anything is recorded.
    made = _executor(executor_kind, gpu, gpus, time_limit_s, address, workers_per_gpu) if executor is None else None
    try:
        store = RunStore.open(store_path)
    except BaseException:
        if made is not None:
            made.close()
        raise
    try:
        if check_unfinished:
            _refuse_unfinished(store, recorded, members)
        batch_id = store.create_batch({})
        folder = Path(candidates).resolve() if candidates else store.location / "batches" / batch_name(batch_id) / \
            "candidates"
        folder.mkdir(parents=True, exist_ok=True)
        store.set_batch_settings(batch_id, {**recorded, "candidates": str(folder), "members": members})
        jobs = [_start_job(store, batch_id, member) for member in members]
        return _run_jobs(store, batch_name(batch_id), jobs, executor or made, progress)
    finally:
        if made is not None:
            made.close()
        store.close()


def start_kernelbench_batch(settings: Settings, tasks_dir: Path, problems: Sequence[str] = (), gpu: bool = True,
                            compile: bool = True, store_path=None, candidates: Path | None = None,
                            gpus: Sequence[str] = (), executor: Executor | None = None,
                            progress: Callable[[str], None] | None = None, time_limit_s: float | None = None,
                            executor_kind: str = "local", address: str | None = None,
                            defer_baselines: bool = False, workers_per_gpu: int = 1) -> BatchOutcome:
    """One generator run per imported KernelBench task under `tasks_dir` (`kernelbench import --out`),
    recorded as a batch: with `--agent external` each run waits for its first kernel (a `generator`
    prompt in `pending`), and `resume --all` judges, repairs and then optimizes it like any batch run;
    with `--agent openai` the coder writes it at once. On a GPU each member also times the task's
    PyTorch eager (and, with `compile`, torch.compile) implementation with the harness when it starts:
    the baselines of `kernelbench report`. Checked before anything is recorded: a coder, the tasks,
    and no task whose `model.cu` exists (a batch never overwrites a kernel).

    `defer_baselines` (external coders only) starts the batch on a machine without a GPU: writing a
    generator prompt needs none, so every prompt exists at once, and each member's PyTorch times are
    taken on the GPU by the `resume --all` that judges its first answer (`advance_payload`)."""
    from skillbase.kernelbench.importer import imported_tasks

    settings.check()
    if settings.agent not in ("external", "openai"):
        raise InputError(f"a KernelBench batch needs a coder to write each first kernel; --agent {settings.agent} "
                         "has none", hint="use --agent external (answers through pending / resume --all) or openai")
    if defer_baselines and settings.agent != "external":
        raise InputError("--defer-baselines needs --agent external (openai writes and judges each first kernel at "
                         "once, on the GPU)", hint="leave --defer-baselines out, or use --agent external")
    if defer_baselines and not gpu:
        raise InputError("--defer-baselines with --no-gpu: a compile-only batch times no PyTorch baselines",
                         hint="leave one of the two out")
    tasks = imported_tasks(Path(tasks_dir), tuple(problems))
    written = [t.folder.name for t in tasks if t.kernel.exists()]
    if written:
        raise InputError(f"{len(written)} task(s) already have a model.cu ({', '.join(written[:3])}"
                         f"{', ...' if len(written) > 3 else ''}); the batch writes each first kernel",
                         hint="leave them out with --problems, or optimize them: skillbase optimize DIR/model.cu")
    members = []
    for task in tasks:
        spec = load_task(task.kernel, check_launcher=False)
        members.append({"operator": task.folder.name, "dtype": spec.outputs[0].dtype, "kernel": str(task.kernel),
                        "generator": True, "problem": task.problem, "level": task.level})
    if settings.agent == "openai":
        ChatClient(load_config(model=settings.model))
    # A deferred start writes prompts only: no GPU is needed (nor checked) until the answers are judged.
    return _record_and_start({"kind": KERNELBENCH, "settings": asdict(settings), "dtype": None, "preset": None,
                              "gpu": gpu, "compile": compile, "defer_baselines": defer_baselines,
                              "tasks": str(Path(tasks_dir).resolve())},
                             members, store_path, candidates, gpu and not defer_baselines, gpus, executor, progress,
                             time_limit_s, executor_kind, address, workers_per_gpu=workers_per_gpu)


KERNELBENCH = "kernelbench"   # a batch's kind: its members are generator runs of imported KernelBench tasks
PYTORCH_STEP = "kb/pytorch"   # a KernelBench member's PyTorch eager / torch.compile times (µs), when it started
_IN_PROGRESS = (RunStatus.RUNNING, RunStatus.PAUSED, RunStatus.INTERRUPTED)   # `resume --all` advances these


def _refuse_unfinished(store: RunStore, recorded: dict, members: list[dict]) -> None:
    """Refuse a `bench optimize` whose (operator, dtype) members are still in progress in an earlier batch
    recorded with the same settings (run paused, running or interrupted, or never started): a rerun of the
    same command, e.g. after a kill, would otherwise start a duplicate of each. Finished and failed runs
    do not count: starting those again is a new measurement."""
    wanted = {(m["operator"], m["dtype"]) for m in members}
    status = {run.id: run.status for run in store.list_runs()}
    found: list[str] = []
    batches: list[str] = []
    for batch in store.list_batches():
        if batch.settings.get("kind") == KERNELBENCH or not _same_settings(batch.settings, recorded):
            continue
        runs = {(m.operator, m.dtype) for m in store.batch_members(batch.id) if status.get(m.run_id) in _IN_PROGRESS}
        never = {(m["operator"], m["dtype"]) for m in _unstarted(store, batch)}
        busy = [f"{m['operator']} {m['dtype']}" for m in batch.settings.get("members", [])
                if (m["operator"], m["dtype"]) in wanted & (runs | never)]
        if busy:
            found += busy
            batches.append(batch.name)
    if found:
        names = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise InputError(f"{names} {'is' if len(found) == 1 else 'are'} still in progress in {', '.join(batches)} "
                         "(same settings)",
                         hint="continue them with skillbase resume --all, or pass --again to start new runs anyway")


def _same_settings(stored: dict, recorded: dict) -> bool:
    """Whether a stored batch was started with the settings `recorded` for a new one (the run settings, as
    `Settings` reads them back: keys of older versions dropped, new ones at their defaults; preset; GPU)."""
    return Settings.from_stored(stored.get("settings", {})) == Settings.from_stored(recorded["settings"]) and \
        stored.get("preset") == recorded["preset"] and stored.get("gpu", True) == recorded["gpu"]


def _unstarted(store: RunStore, batch: BatchRow) -> list[dict[str, Any]]:
    """The members the batch names but has no run for: a killed (or out-of-time) start never started them."""
    started = {(m.operator, m.dtype) for m in store.batch_members(batch.id)}
    return [m for m in batch.settings.get("members", []) if (m["operator"], m["dtype"]) not in started]


def _start_job(store: RunStore, batch_id: int, member: dict[str, Any]) -> Job:
    return Job("start-run", "skillbase.run.batch:start_payload",
               {"store": str(store.location), "batch": batch_id, "operator": member["operator"],
                "dtype": member["dtype"], "kernel": member["kernel"], "generator": bool(member.get("generator"))},
               label=f"{member['operator']} {member['dtype']}")


def start_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The GPU job that starts one member of a batch (in whichever worker it lands)."""
    store = RunStore.open(payload["store"])
    try:
        batch = store.get_batch(payload["batch"]).settings
    finally:
        store.close()
    stored = batch["settings"]
    settings = Settings.from_stored(stored)

    def join(run_store: RunStore, run_id: int) -> None:
        run_store.add_batch_run(payload["batch"], run_id, payload["operator"], payload["dtype"])

    if payload.get("generator"):
        summary = _start_generator_member(Path(payload["kernel"]), settings, payload["store"], batch, join)
    else:
        summary = start_run(Path(payload["kernel"]), settings, store_path=payload["store"],
                            preset=batch.get("preset"), gpu=batch.get("gpu", True), progress=_quiet, on_created=join,
                            task_name=f"{payload['operator']}-{payload['dtype']}")
    return {"run": summary["run"], "action": MemberAction.STARTED, "status": summary["status"],
            "reason": summary["stop_reason"] or ""}


def _start_generator_member(kernel: Path, settings: Settings, store_path: str, batch: dict[str, Any],
                            join: Callable[[RunStore, int], None]) -> dict:
    """A KernelBench member: a run waiting for its first kernel (external), or the coder's first kernel
    then the rounds (openai: a kernel a killed start already wrote is optimized as it is); on a GPU,
    the task's PyTorch times recorded in the run (`PYTORCH_STEP`)."""
    gpu = batch.get("gpu", True)
    if settings.agent == "external":
        summary = start_generator_run(kernel, settings, store_path=store_path, gpu=gpu, on_created=join)
    else:
        if not kernel.exists():
            generate_from_reference(kernel, settings, gpu=gpu, progress=_quiet)
        summary = start_run(kernel, settings, store_path=store_path, gpu=gpu, progress=_quiet, on_created=join,
                            task_name=kernel.parent.name)
    if gpu and not batch.get("defer_baselines"):
        _record_pytorch_times(store_path, summary["run"], kernel.parent, batch.get("compile", True))
    return summary


def _record_pytorch_times(store_path: str, run_ref: str | int, task_folder: Path, compile: bool) -> None:
    """The task's PyTorch eager (and torch.compile) times, by the harness on this GPU, into the run."""
    from skillbase.kernelbench.scoring import time_pytorch

    times = time_pytorch(task_folder, compile=compile)
    store = RunStore.open(store_path)
    try:
        with store.transaction() as tx:
            tx.finish_step(store.get_run(run_ref).id, PYTORCH_STEP, times)
    finally:
        store.close()


def _baselines_owed(store: RunStore, batch: int | None) -> dict[int, bool]:
    """The members of KernelBench batches started with `defer_baselines` whose PyTorch times are not
    recorded yet (run id -> time torch.compile too): their next judging job takes them first."""
    owed = {}
    settings = {}
    for member in store.batch_members(batch):
        if member.batch_id not in settings:
            settings[member.batch_id] = store.get_batch(member.batch_id).settings
        of_batch = settings[member.batch_id]
        if of_batch.get("defer_baselines") and of_batch.get("gpu", True) \
                and store.step_result(member.run_id, PYTORCH_STEP) is None:
            owed[member.run_id] = bool(of_batch.get("compile", True))
    return owed


def kernelbench_batches(store: RunStore, batches: Sequence[str | int] = ()) -> list[BatchRow]:
    """The KernelBench batches named (default: the latest one); a batch of another kind is refused."""
    rows = [store.get_batch(b) for b in batches] if batches else \
        [b for b in store.list_batches() if b.settings.get("kind") == KERNELBENCH][-1:]
    if not rows:
        raise InputError(f"no KernelBench batch in {store.location}",
                         hint="start one: skillbase kernelbench optimize TASKS_DIR --agent external")
    for row in rows:
        if row.settings.get("kind") != KERNELBENCH:
            raise InputError(f"{batch_name(row.id)} is not a KernelBench batch",
                             hint="its report: skillbase bench optimize-report")
    return rows


# -- kernelbench baselines -------------------------------------------------------------------------

def add_missing_baselines(store_path=None, batches: Sequence[str | int] = (), problems: Sequence[str] = (),
                          gpus: Sequence[str] = (), executor: Executor | None = None,
                          progress: Callable[[int, int, str], None] | None = None,
                          time_limit_s: float | None = None, workers_per_gpu: int = 1,
                          retry_failed: bool = False) -> BatchOutcome:
    """Time what the members of the KernelBench `batches` (default: the latest) lack in their PyTorch times
    (`PYTORCH_STEP`) and merge it into that step: torch.compile where the step holds no compile entry (or, with
    `retry_failed`, where it failed to verify), eager where its eager time is missing (its timing failed: the
    reason it gave is replaced by the new result).
    A recorded eager time is never taken again, since the report divides it by the kernel's time. One GPU
    job per member (`baselines_payload`), on the executor `resume --all` uses (its GPU lock, memory turns
    and `time_limit_s` deferral alike); members with nothing missing, without PyTorch times yet, or not
    started are left alone, each with its reason."""
    from skillbase.kernelbench.importer import task_names
    from skillbase.kernelbench.scoring import COMPILE_SOUND_FROM, adapter_of

    store = RunStore.open(store_path, read_only=True)   # each job writes its member's step itself
    made = None
    try:
        rows = kernelbench_batches(store, batches)
        picked = [(row, m) for row in rows for m in row.settings["members"]]
        if problems:
            missing = [p for p in problems
                       if not any(p in task_names(m["operator"], m["problem"], m["level"]) for _, m in picked)]
            if missing:
                raise InputError(f"{', '.join(missing)}: not a problem of {', '.join(batch_name(r.id) for r in rows)}",
                                 hint="name a member by folder (level1_2_ReLU), problem (level1/2_ReLU.py) or "
                                      "level1/2; skillbase kernelbench report lists them")
            picked = [(row, m) for row, m in picked
                      if task_names(m["operator"], m["problem"], m["level"]) & set(problems)]
        members: list[MemberOutcome] = []
        work: list[Job] = []
        for row, member in picked:
            runs = {m.operator: m.run_id for m in store.batch_members(row.id)}
            run_id = runs.get(member["operator"])
            run = store.get_run(run_id) if run_id is not None else None
            label = run_name(run_id) if run_id is not None else member["operator"]
            times = store.step_result(run_id, PYTORCH_STEP) if run_id is not None else None
            wanted = missing_baselines(times, retry_failed) if times is not None else {}
            if run_id is None:
                reason = "not started (resume --all starts it)"
            elif not row.settings.get("gpu", True):
                reason = "compile-only batch (--no-gpu): no PyTorch times"
            elif times is None:
                reason = "no PyTorch times yet (resume --all takes them when it judges the first kernel)"
            elif not any(wanted.values()):
                reason = "PyTorch eager and torch.compile already timed"
            elif _ended_without_kernel(run):
                # nothing of it is scored against PyTorch (level2/9 of the H200 run: stopped by hand, its
                # reference all zeros), so a timing would spend minutes of GPU on every call
                reason = f"ended without a kernel to compare ({run.stop_reason})"
            elif wanted["compile"] and adapter_of(Path(run.task_path).parent) < COMPILE_SOUND_FROM:
                reason = ("its task folder's adapter predates torch.compile compiling there (it would time eager "
                          "again): refresh it first (skillbase kernelbench import PATH --refresh --out TASKS_DIR)")
            else:
                # each PyTorch timing is a whole harness judgement (inputs, reference, verify, time), so the
                # member's own longest judgement per timing owed is what the job must fit under a time limit
                longest = longest_judging_s(store, run_id)
                work.append(Job("pytorch-baselines", "skillbase.run.batch:baselines_payload",
                                {"store": str(store.location), "run": run_id, **wanted}, label=label,
                                estimate_s=None if longest is None else longest * sum(wanted.values())))
                continue
            members.append(MemberOutcome(label, MemberAction.LEFT_ALONE, f"{member['problem']}: {reason}",
                                         None if run is None else str(run.status),
                                         None if run_id is None else label))
        # The quickest first: under a time limit the most members get their times (an activation's timing of
        # 6 GB tensors takes minutes, a GEMM's half of one). Unknown estimates last, in member order.
        work.sort(key=lambda job: (job.estimate_s is None, job.estimate_s or 0.0))
        if executor is None:
            executor = made = _executor("local", bool(work), gpus, time_limit_s, None, workers_per_gpu)
        outcome = _run_jobs(store, batch_name(rows[0].id) if len(rows) == 1 else None, work, executor, progress)
        outcome.members[:0] = members
        return outcome
    finally:
        if made is not None:
            made.close()
        store.close()


def _ended_without_kernel(run) -> bool:
    """A member that finished or failed before any kernel of its own was verified (no task digest)."""
    return run.status in (RunStatus.FINISHED, RunStatus.FAILED) and not run.manifest.get("task_digest")


def missing_baselines(times: dict[str, Any], retry_failed: bool = False) -> dict[str, bool]:
    """Which PyTorch times a member's `PYTORCH_STEP` lacks: {"eager": no eager time (its timing failed),
    "compile": never tried (a torch.compile that failed to verify has its reason and is not tried again, unless
    `retry_failed`: after a harness fix; or timed through an adapter whose torch.compile ran eager)}."""
    from skillbase.kernelbench.scoring import compile_time

    failed = times.get("compile") is None and "compile_reason" in times
    stale = times.get("compile") is not None and compile_time(times)[0] is None   # eager's, through an old adapter
    return {"eager": times.get("eager") is None,
            "compile": ("compile" not in times and "compile_reason" not in times) or (retry_failed and failed)
            or stale}


def baselines_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The GPU job that times what one member's PyTorch times lack (`payload["eager"]`, `payload["compile"]`)
    and merges it into its `PYTORCH_STEP`: a new time replaces the reason an earlier failure left."""
    from skillbase.kernelbench.scoring import time_pytorch

    store = RunStore.open(payload["store"])
    try:
        run = store.get_run(payload["run"])
        timed = time_pytorch(Path(run.task_path).parent, compile=bool(payload.get("compile")),
                             eager=bool(payload.get("eager")))
        with store.transaction() as tx:   # read again inside: nothing else is lost from the step
            times = dict(store.step_result(run.id, PYTORCH_STEP) or {})
            for label in ("eager", "compile"):
                if label in timed:
                    times.pop(f"{label}_reason", None)
            times.update(timed)
            tx.finish_step(run.id, PYTORCH_STEP, times)
        status = str(store.get_run(run.id).status)
    finally:
        store.close()
    reasons = []
    for label, name in (("eager", "eager"), ("compile", "torch.compile")):
        if label in timed:
            reasons.append(f"{name} {timed[label]:.1f} µs" if timed[label] is not None else
                           f"{name} did not verify: {timed.get(f'{label}_reason')}")
    return {"run": run.name, "action": MemberAction.TIMED, "status": status, "reason": "; ".join(reasons)}


# -- resume --all ---------------------------------------------------------------------------------

def resume_all(store_path=None, candidates: Path | None = None, batch: str | int | None = None,
               gpus: Sequence[str] = (), executor: Executor | None = None,
               progress: Callable[[int, int, str], None] | None = None, time_limit_s: float | None = None,
               executor_kind: str = "local", address: str | None = None, jobs: int | None = None,
               workers_per_gpu: int = 1) -> BatchOutcome:
    """Judge every paused run's candidate present, continue killed runs, start missing members.

    `candidates` overrides where candidates are looked for (default: each run's expected path);
    `batch` limits the work to one batch. Runs without a usable candidate stay paused, each with
    its reason (also shown by `skillbase pending`). After `time_limit_s` no further job starts: the
    runs not reached stay as they were (`deferred`), and the next call takes them up. `executor_kind`,
    `address` and `workers_per_gpu` as for `start_batch` (a batch started with either executor resumes with either);
    `progress` as for `start_batch`, over the jobs run (runs judged, continued or started). The
    candidates are first built by `jobs` parallel nvcc processes (default `default_jobs()`; 0: each
    is built when it is judged), unless the jobs run on other machines (Ray), whose caches are not here."""
    store = RunStore.open(store_path)
    made = None
    try:
        wanted = parse_batch_ref(batch) if batch is not None else None
        if wanted is not None:
            store.get_batch(wanted)
        members: list[MemberOutcome] = []
        work: list[Job] = []
        answers: list[tuple[int, str]] = []   # (run id, candidate source): what the prebuild builds
        needs_gpu = False
        killed = _killed(store, wanted)   # first: a killed run may be paused again, and judged below
        owed = _baselines_owed(store, wanted)
        # here, before anything is built: a run timed on another GPU model is not judged on this one (on Ray the
        # jobs run on other machines, whose GPUs the run's own resume checks)
        local = executor_kind == "local" if executor is None else not executor.remote
        here = env.gpu_name() if local else None   # once: nvidia-smi per run would add seconds to a batch
        for run_id in list(killed):
            run = store.get_run(run_id)
            if (refused := other_gpu(run, here)) is not None:
                killed.remove(run_id)
                members.append(MemberOutcome(run.name, MemberAction.LEFT_ALONE, "; ".join(refused),
                                             store.shown_status(run), run.name))
        for prompt in pending_in(store, wanted):
            run = store.get_run(prompt.run_id)
            cu, meta = _candidate_paths(prompt, candidates)
            refused = other_gpu(run, here)
            read = "; ".join(refused) if refused is not None else \
                read_candidate(cu, meta, prompt, run.manifest.get("launcher"), store.judged_sources(run.id))
            if isinstance(read, str):
                store.note_waiting(run.id, prompt.key, read)
                members.append(MemberOutcome(prompt.run, MemberAction.WAITING, read, RunStatus.PAUSED, prompt.run))
                continue
            source, reply = read
            answers.append((run.id, source))
            work.append(_advance_job(store, run.id, source, reply, prompt.key, owed.get(run.id)))
            needs_gpu |= bool(run.manifest.get("gpu_run", True))
        for run_id in killed:
            run = store.get_run(run_id)
            work.append(_advance_job(store, run_id, None, None, None, owed.get(run_id)))
            needs_gpu |= bool(run.manifest.get("gpu_run", True))
        for batch_row in ([store.get_batch(wanted)] if wanted is not None else store.list_batches()):
            for member in _unstarted(store, batch_row):
                work.append(_start_job(store, batch_row.id, member))
                needs_gpu |= bool(batch_row.settings.get("gpu", True)) and not batch_row.settings.get("defer_baselines")
        if executor is None:
            executor = made = _executor(executor_kind if work else "local", needs_gpu and bool(work), gpus,
                                        time_limit_s, address if work else None, workers_per_gpu)
        if answers and not executor.remote:
            prebuild_candidates(store, answers, default_jobs() if jobs is None else jobs)
        outcome = _run_jobs(store, batch_name(wanted) if wanted is not None else None, work, executor, progress)
        outcome.members[:0] = members
        return outcome
    finally:
        if made is not None:
            made.close()
        store.close()


def default_jobs() -> int:
    """Parallel nvcc processes of a prebuild: one per core, at most 16."""
    return min(os.cpu_count() or 1, 16)


def prebuild_candidates(store: RunStore, answers: Sequence[tuple[int, str]], jobs: int) -> int:
    """Build each (run id, candidate source) into the build cache as its run's judge will (the same
    scratch copy, flags, arch, link: the same cache key), `jobs` nvcc processes at a time; returns
    how many builds were asked for. Only warms the cache: a candidate the judge would not build (the
    static check refuses it) is skipped, and a build failure is left for the judge to report."""
    if jobs < 1:
        return 0
    requests = []
    for run_id, source in answers:
        try:
            request = _judge_build(store, run_id, source)
        except (SkillbaseError, OSError):
            continue   # the judge meets the same problem and reports it
        if request is not None:
            requests.append(request)
    build_all(requests, jobs)
    return len(requests)


def _judge_build(store: RunStore, run_id: int, source: str) -> dict | None:
    """The `build()` arguments with which run `run_id`'s judge builds `source` (None: it builds nothing),
    asked of that judge itself. A candidate takes the flags of the run's best (the external coder's
    candidate does); a generator run's first kernel, judged as a baseline, none."""
    run = store.get_run(run_id)
    kernel = Path(run.task_path)
    judge = judge_for(kernel, load_task(kernel, check_launcher=False), gpu=run.manifest.get("gpu_run", True))
    generator = run.manifest.get("from_reference") and not run.manifest.get("task_digest")
    return judge.build_request(source, () if generator else _best_flags(store, run_id))


def _best_flags(store: RunStore, run_id: int) -> tuple[str, ...]:
    """The flags of the run's current best: those of the last round that accepted a kernel (the loop's `best_flags`)."""
    flags: tuple[str, ...] = ()
    for idx in itertools.count():
        outcome = store.step_result(run_id, f"r{idx}/outcome")
        if outcome is None:
            return flags
        if outcome.get("status") == Outcome.ACCEPTED and outcome.get("best"):
            flags = tuple(outcome["best"].get("flags", ()))
    return flags


def _candidate_paths(prompt: PendingPrompt, candidates: Path | None) -> tuple[Path, Path]:
    if candidates is None:
        return prompt.candidate_path, prompt.meta_path
    folder = Path(candidates)
    return folder / f"{prompt.run}.cu", folder / f"{prompt.run}.meta.json"


def _killed(store: RunStore, batch: int | None) -> list[int]:
    """The batch runs whose process died (kill -9, a lost machine) mid-way. One killed before it
    recorded the candidate it was answering is paused again, so this same call judges that candidate
    (its file is still there); the others continue from their last finished step."""
    members = {m.run_id for m in store.batch_members(batch)}
    here = socket.gethostname()
    found = []
    for run in sorted(store.list_runs(), key=lambda r: r.id):
        if run.id not in members:
            continue   # a run of its own: `skillbase resume run_N` is its owner's call, not the batch's
        # A run left `running` by another machine came here in a packed store: its process is gone.
        owner = (store.last_event(run.id, "owner") or {}).get("host") if run.status == RunStatus.RUNNING else None
        elsewhere = owner is not None and owner != here
        if store.shown_status(run) != RunStatus.INTERRUPTED and not elsewhere:
            continue
        key = waiting_key(store, run.id)
        if key is not None and store.step_result(run.id, f"{key}/candidate") is None:
            store.update_run(run.id, status=RunStatus.PAUSED,
                             stop_reason=f"waiting for a candidate (its process was killed before judging {key})")
        else:
            found.append(run.id)
    return found


def _advance_job(store: RunStore, run_id: int, source: str | None, reply: CoderReply | None,
                 key: str | None, baselines_compile: bool | None = None) -> Job:
    """`baselines_compile` not None: the run's PyTorch times are owed (`_baselines_owed`), taken first."""
    return Job("advance-run", "skillbase.run.batch:advance_payload",
               {"store": str(store.location), "run": run_id, "candidate": source, "key": key,
                "reply": asdict(reply) if reply is not None else None, "baselines_compile": baselines_compile},
               label=run_name(run_id), estimate_s=longest_judging_s(store, run_id))


def judging_s(store: RunStore, attempt) -> float:
    """An attempt's judging time: its wall span less what its judging waited for its GPU's lock (`gpu_wait`, with
    several workers per GPU or jobs queued on one) and for room in its memory (`memory_wait`), so that it counts
    the run's own judging, not its queue; an attempt with no phases recorded (stores older than them) keeps its
    whole span."""
    span = (attempt["finished_at"] or attempt["created_at"]) - attempt["created_at"]
    phases = store.attempt_phases(attempt) or {}
    return max(0.0, span - phases.get(GPU_WAIT, 0.0) - phases.get(MEMORY_WAIT, 0.0))


def judged_attempts(attempts: Sequence) -> list:
    """Those of a run's attempts (`store.attempts`) that reached the judge (not a reply without code, an LLM
    error, or one still pending)."""
    return [a for a in attempts if a["status"] not in (Status.PENDING, Status.NO_CODE, Status.LLM_ERROR)]


def longest_judging_s(store: RunStore, run_id: int) -> float | None:
    """The longest judging of the run's finished attempts (None: none finished): what its next judgement is
    expected to take at least, whatever shorter jobs the same command ran first (`TimeBudget`)."""
    spans = [judging_s(store, a) for a in judged_attempts(store.attempts(run_id)) if a["finished_at"] is not None]
    return round(max(spans), 1) if spans else None


def advance_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The GPU job that judges one run's candidate (or continues a killed run) until its next pause;
    a KernelBench member started with deferred baselines has its PyTorch times taken first."""
    reply = CoderReply(**payload["reply"]) if payload.get("reply") else None
    if payload.get("baselines_compile") is not None:
        store = RunStore.open(payload["store"])
        try:
            task_folder = Path(store.get_run(payload["run"]).task_path).parent
        finally:
            store.close()
        _record_pytorch_times(payload["store"], payload["run"], task_folder, payload["baselines_compile"])
    summary = resume_run(payload["run"], store_path=payload["store"], candidate=payload.get("candidate"),
                         progress=_quiet, reply=reply)
    action, reason = MemberAction.CONTINUED, summary["stop_reason"] or ""
    if payload.get("candidate") is not None and payload.get("key"):
        store = RunStore.open(payload["store"])
        try:
            verdict = store.step_result(payload["run"], f"{payload['key']}/verdict")
        finally:
            store.close()
        action = MemberAction.JUDGED
        if verdict is not None:
            speedup = f" ({verdict['speedup']:.2f}x)" if verdict.get("speedup") else ""
            reason = f"{payload['key']}: {verdict['status']}{speedup}: {verdict['reason']}; then {reason}"
    return {"run": summary["run"], "action": action, "status": summary["status"], "reason": reason}


def _run_jobs(store: RunStore, batch: str | None, jobs: list[Job], executor: Executor,
              progress: Callable[[int, int, str], None] | None) -> BatchOutcome:
    outcome = BatchOutcome(batch)
    total = len(jobs)

    def arrived(done: JobResult) -> None:
        if done.error is not None:
            action = (MemberAction.DEFERRED if not_started(done.error) else
                      MemberAction.INTERRUPTED if interrupted(done.error) else MemberAction.FAILED)
            member = MemberOutcome(done.job.label, action, done.error, None,
                                   done.job.label if done.job.label.startswith("run_") else None,
                                   done.wall_s, done.phases_s)
            if done.job.kind == "advance-run" and done.job.payload.get("key"):
                # Not judged (deferred, or stopped by the machine before a verdict): `pending` says why, not an
                # older note from a previous batch.
                store.note_waiting(done.job.payload["run"], done.job.payload["key"], done.error)
        else:
            value = done.value
            member = MemberOutcome(value["run"], MemberAction(value["action"]), value["reason"], value["status"],
                                   value["run"], done.wall_s, done.phases_s)
        outcome.members.append(member)
        if progress is not None:
            line = judged_line(member.label, member.action, member.wall_s, member.phases_s)
            progress(len(outcome.members), total, f"{line} -- {member.reason}")

    if progress is not None and jobs:
        progress(0, total, "")      # the count before the first run ends (a run takes minutes)
    if executor.remote:   # its jobs cannot open this store: each works on a private copy, applied here
        with Shipment(store) as shipment:
            executor.run(shipment.ship(jobs), lambda done: arrived(shipment.settle(done)))
    else:
        executor.run(jobs, arrived)
    outcome.pending = pending_in(store, parse_batch_ref(batch) if batch else None)
    return outcome


def _gpu_ids(gpu: bool, gpus: Sequence[str], workers_per_gpu: int = 1) -> list[str]:
    """The CUDA_VISIBLE_DEVICES values to run on, one per worker: none for a compile-only batch (its jobs
    run one after another in this process), else --gpus or every GPU, each `workers_per_gpu` times."""
    if not gpu:
        return []
    found = env.require_gpus(hint="run the batch on a GPU machine, or pass --no-gpu for a compile-only batch")
    return visible_devices(list(gpus), len(found), workers_per_gpu)


def _executor(kind: str, gpu: bool, gpus: Sequence[str], time_limit_s: float | None, address: str | None,
              workers_per_gpu: int = 1):
    """The executor of `--executor`: this host's GPUs (checked: `_gpu_ids`) or a Ray cluster (checked on
    connection; it places each run on a free GPU of its own, so `workers_per_gpu` must be 1)."""
    check_workers_per_gpu(workers_per_gpu, kind)
    gpu_ids = _gpu_ids(gpu, gpus, workers_per_gpu) if kind == "local" else []
    return make_executor(kind, gpu_ids, _deadline(time_limit_s), address)


def _deadline(time_limit_s: float | None) -> float | None:
    return time.time() + time_limit_s if time_limit_s is not None else None


def _quiet(message: str) -> None:
    """A run's own progress lines stay out of a batch's output (its store holds every step)."""


# -- candidates -----------------------------------------------------------------------------------


def read_candidate(path: Path, meta_path: Path, prompt: PendingPrompt, launcher: str | None,
                   judged: dict[str, str]) -> tuple[str, CoderReply | None] | str:
    """The candidate for `prompt` and what its meta file says, or the one-line reason it cannot be judged."""
    if not path.is_file():
        return missing_note(path)
    if path.stat().st_size > MAX_CANDIDATE_BYTES:
        return f"too large: {path.name} is over {MAX_CANDIDATE_BYTES >> 20} MiB (a kernel's source is not)"
    data = path.read_bytes()
    if not data.strip():
        return f"empty: {path.name} holds nothing"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"binary: {path.name} is not UTF-8 text"
    if "\0" in text:
        return f"binary: {path.name} holds NUL bytes"
    try:
        source = candidate_source(text, launcher)
    except NoCodeInReply as problem:
        return f"not CUDA: {path.name}: {problem.message.replace('the LLM reply', 'the reply')}"
    if "__global__" not in source:
        return f"not CUDA: {path.name} defines no __global__ kernel"
    if launcher and not re.search(rf"\b{re.escape(launcher)}\s*\(", source):
        return f"for another task: {path.name} does not define this task's launcher {launcher}()"
    if again := judged_again(path, source, judged, prompt.key):
        return again
    reply = _read_meta(meta_path, prompt)
    if isinstance(reply, str):
        return reply
    return source, reply


def _read_meta(path: Path, prompt: PendingPrompt) -> CoderReply | None | str:
    if not path.exists():
        return None
    try:
        meta = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return f"meta: {path.name} is not JSON"
    if not isinstance(meta, dict):
        return f"meta: {path.name} is not a JSON object"
    if meta.get("run") not in (None, prompt.run):
        return f"for another run: {path.name} names {meta['run']}, this is {prompt.run}"
    if meta.get("key") not in (None, prompt.key):
        return f"for another prompt: {path.name} answers {meta['key']}, {prompt.run} waits for {prompt.key}"
    model = meta.get("model")
    if not isinstance(model, str) or not model.strip():
        return f"meta: {path.name} names no model (\"model\": \"...\" is required)"
    wall_s, reply_tokens = meta.get("wall_s"), meta.get("reply_tokens")
    if wall_s is not None and (not isinstance(wall_s, int | float) or isinstance(wall_s, bool) or wall_s < 0):
        return f"meta: {path.name}: wall_s must be a number of seconds"
    if reply_tokens is not None and (not isinstance(reply_tokens, int) or isinstance(reply_tokens, bool)
                                     or reply_tokens < 0):
        return f"meta: {path.name}: reply_tokens must be a whole number"
    return CoderReply(model=model.strip(), wall_s=float(wall_s) if wall_s is not None else None,
                      reply_tokens=reply_tokens)
