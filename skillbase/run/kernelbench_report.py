"""The results of a KernelBench batch (`skillbase kernelbench report`), read from the run store.

Per problem: the run, whether its first kernel verified (the generator step), the best kernel's time,
the PyTorch eager and torch.compile times the member measured with the same harness when it started,
and the speedups over them; per level KernelBench's scores (skillbase.kernelbench.scoring: fast_p over
every problem of the batch, a problem not verified, not started or not timed counting as not fast;
geomean over the verified ones). A compile-only batch (`--no-gpu`) verifies nothing: every problem is
listed with that reason and the scores say so (fast_0 = 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from skillbase.documents import versioned
from skillbase.kernelbench.scoring import ProblemResult, compile_time, score_levels
from skillbase.run.batch import PYTORCH_STEP, kernelbench_batches
from skillbase.run.store import RunStore, batch_name
from skillbase.run.types import Outcome, RunStatus

__all__ = ["KernelBenchProblem", "KernelBenchReport", "kernelbench_report"]


@dataclass
class KernelBenchProblem:
    problem: str                       # level1/2_ReLU.py
    level: int
    task: str                          # the task folder's name
    batch: str
    run: str | None                    # None: the member never started
    status: str
    verified: bool                     # the first kernel verified on the GPU (and so every accepted one after it)
    first_kernel_us: float | None      # the generator's kernel: the run's baseline
    kernel_us: float | None            # the run's best kernel
    eager_us: float | None
    compile_us: float | None
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    speedup_vs_first: float | None     # what the skill rounds added over the first kernel
    generator_tries: int
    accepted_skills: list[str]
    reason: str | None                 # why it is not verified (or not timed against PyTorch)
    compile_reason: str | None = None  # why a verified kernel has no torch.compile time to compare with

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def scored(self) -> ProblemResult:
        return ProblemResult(self.problem, self.level, self.verified, self.kernel_us, self.eager_us, self.compile_us)


@dataclass
class KernelBenchReport:
    batches: list[dict[str, Any]]
    problems: list[KernelBenchProblem] = field(default_factory=list)

    def levels(self) -> list[dict[str, Any]]:
        return [s.as_dict() for s in score_levels([p.scored() for p in self.problems])]

    def to_json(self) -> dict[str, Any]:
        return versioned("kernelbench-report", {"batches": self.batches,
                                                "problems": [p.to_json() for p in self.problems],
                                                "levels": self.levels()})

    def lines(self) -> list[str]:
        """The report as text: one line per problem, one per level."""
        out = []
        for p in self.problems:
            why = p.reason or (p.compile_reason and f"no torch.compile time: {p.compile_reason}")
            tail = f"  ({why})" if why else ""
            out.append(f"{p.problem} [{p.run or 'not started'}, {p.status}]: kernel {_us(p.kernel_us)}, eager "
                       f"{_us(p.eager_us)}, compile {_us(p.compile_us)}; {_x(p.speedup_vs_eager)} over eager, "
                       f"{_x(p.speedup_vs_compile)} over compile, {_x(p.speedup_vs_first)} over the first kernel{tail}")
        for level in self.levels():
            fast = ", ".join(f"{k} {v:.0%}" for k, v in level["fast_p"].items())
            out.append(f"level {level['level']}: {level['verified']}/{level['problems']} verified; {fast}; geomean "
                       f"{_x(level['geomean_speedup_vs_eager'])} over eager ({level['geomean_over']} problems), "
                       f"{_x(level['geomean_speedup_vs_compile'])} over torch.compile "
                       f"({level['geomean_vs_compile_over']} problems)")
        return out


def kernelbench_report(store_path=None, batches: Sequence[str | int] = ()) -> KernelBenchReport:
    """The report of the KernelBench `batches` of the store (default: the latest one)."""
    store = RunStore.open(store_path, read_only=True)   # a report writes nothing
    try:
        report = KernelBenchReport(batches=[])
        for row in kernelbench_batches(store, batches):
            name = batch_name(row.id)
            settings = row.settings.get("settings", {})
            report.batches.append({"batch": name, "agent": settings.get("agent"), "gpu": row.settings.get("gpu", True),
                                   "tasks": row.settings.get("tasks"), "problems": len(row.settings["members"])})
            runs = {m.operator: m.run_id for m in store.batch_members(row.id)}
            for member in row.settings["members"]:
                report.problems.append(_problem(store, member, name, runs.get(member["operator"]),
                                                row.settings.get("gpu", True)))
        return report
    finally:
        store.close()


def _problem(store: RunStore, member: dict, batch: str, run_id: int | None, gpu: bool) -> KernelBenchProblem:
    base = {"problem": member["problem"], "level": member["level"], "task": member["operator"], "batch": batch}
    if run_id is None:
        return KernelBenchProblem(**base, run=None, status="not started", verified=False, first_kernel_us=None,
                                  kernel_us=None, eager_us=None, compile_us=None, speedup_vs_eager=None,
                                  speedup_vs_compile=None, speedup_vs_first=None, generator_tries=0,
                                  accepted_skills=[], reason="not started (resume --all starts it)")
    run = store.get_run(run_id)
    status = str(store.shown_status(run))
    has_kernel = bool(run.manifest.get("task_digest"))
    verified = gpu and has_kernel and run.baseline_us is not None
    kernel_us = (run.best_us or run.baseline_us) if verified else None
    pytorch = store.step_result(run.id, PYTORCH_STEP) or {}
    eager_us, (compile_us, no_compile_because) = pytorch.get("eager"), compile_time(pytorch)
    if not gpu:
        reason = "compile-only batch (--no-gpu): not verified or timed"
    elif not has_kernel:
        reason = run.stop_reason if status in (RunStatus.FAILED, RunStatus.FINISHED) else "waiting for its first kernel"
    elif not verified:
        reason = f"its first kernel was not timed: {run.stop_reason}"
    elif eager_us is None:
        reason = pytorch.get("eager_reason") or "PyTorch eager not measured (the member's start was interrupted)"
    else:
        reason = None
    compile_reason = None
    if verified and compile_us is None:
        compile_reason = no_compile_because or ("not timed yet (skillbase kernelbench baselines times it)"
                                                if pytorch else "no PyTorch times yet")
    decisions = {d["round_idx"]: d["chosen_skill"] for d in store.decisions(run.id)}
    return KernelBenchProblem(
        **base, run=run.name, status=status, verified=verified, first_kernel_us=run.baseline_us if verified else None,
        kernel_us=kernel_us, eager_us=eager_us, compile_us=compile_us,
        speedup_vs_eager=eager_us / kernel_us if kernel_us and eager_us else None,
        speedup_vs_compile=compile_us / kernel_us if kernel_us and compile_us else None,
        speedup_vs_first=run.baseline_us / kernel_us if kernel_us and run.baseline_us else None,
        generator_tries=sum(key.startswith("g/") for key in store.judged_sources(run.id)),
        accepted_skills=[decisions.get(r["idx"]) or "?" for r in store.rounds(run.id)
                         if r["outcome"] == Outcome.ACCEPTED],
        reason=reason, compile_reason=compile_reason)


def _us(value: float | None) -> str:
    return f"{value:.1f} µs" if value is not None else "-"


def _x(value: float | None) -> str:
    return f"{value:.2f}x" if value is not None else "-"
