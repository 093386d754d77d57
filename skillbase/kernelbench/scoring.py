"""KernelBench's scores on our measurements: speedup over PyTorch eager, fast_p, geomean by level.

KernelBench (Ouyang et al., 2025) defines, per problem, `speedup = eager time / kernel time` and
`fast_p` = the fraction of *all* problems of a level whose kernel is correct and more than p times
faster than eager (fast_0 is the correct rate). We keep those definitions: a problem that did not
import, did not verify or was never run counts in the denominator as not fast. What counts as
"correct" and how times are measured is our harness's, stricter than theirs (docs/kernelbench.md).
The geometric mean of the speedup is over the verified problems only and says how many those are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from skillbase.bench.results import geomean
from skillbase.errors import InputError

__all__ = ["ProblemResult", "LevelScore", "ScoreReport", "fast_p", "geomean", "score_levels", "score_tasks",
           "time_pytorch", "compile_time", "adapter_of", "FAST_P", "COMPILE_SOUND_FROM"]

FAST_P = (0.0, 1.0, 1.5, 2.0)
# The first adapter version (task_files.ADAPTER_VERSION) whose torch.compile compiles the forward pass. Under
# version 1 the harness's switches between the scored and the irregular size made dynamo recompile the adapter's
# bookkeeping until its recompile limit, after which it ran eager: its "torch.compile" times are eager's
# (session 25, tools/measure/torch_compile_check.py: level2/7 4725 us compiled, 7398 us through the harness).
COMPILE_SOUND_FROM = 2


@dataclass(frozen=True)
class ProblemResult:
    """One problem's result: verified or not, our kernel's time and the two PyTorch baselines' (µs)."""
    problem: str
    level: int
    verified: bool
    kernel_us: float | None = None
    eager_us: float | None = None
    compile_us: float | None = None

    @property
    def speedup(self) -> float | None:
        """Over PyTorch eager; None unless verified and both times measured."""
        if not self.verified or not self.kernel_us or not self.eager_us:
            return None
        return self.eager_us / self.kernel_us

    @property
    def speedup_vs_compile(self) -> float | None:
        if not self.verified or not self.kernel_us or not self.compile_us:
            return None
        return self.compile_us / self.kernel_us


@dataclass(frozen=True)
class LevelScore:
    level: int
    problems: int
    verified: int
    fast: dict[float, float]              # p -> fast_p
    geomean_speedup: float | None         # over eager, verified problems with both times
    geomean_vs_compile: float | None      # over torch.compile, likewise
    geomean_of: int                       # how many problems the eager geomean is over
    geomean_vs_compile_of: int = 0        # how many the torch.compile geomean is over (some have no compile time)

    def as_dict(self) -> dict:
        return {"level": self.level, "problems": self.problems, "verified": self.verified,
                "fast_p": {f"fast_{p:g}": v for p, v in self.fast.items()},
                "geomean_speedup_vs_eager": self.geomean_speedup,
                "geomean_speedup_vs_compile": self.geomean_vs_compile, "geomean_over": self.geomean_of,
                "geomean_vs_compile_over": self.geomean_vs_compile_of}


def fast_p(results: Sequence[ProblemResult], p: float) -> float:
    """KernelBench's fast_p: verified and speedup over eager > p, over every problem given."""
    if not results:
        return 0.0
    hits = sum(1 for r in results if r.verified and (p == 0.0 or (r.speedup is not None and r.speedup > p)))
    return hits / len(results)


def score_levels(results: Sequence[ProblemResult], ps: Sequence[float] = FAST_P) -> list[LevelScore]:
    """One score per level, in level order."""
    scores = []
    for level in sorted({r.level for r in results}):
        mine = [r for r in results if r.level == level]
        speedups = [r.speedup for r in mine if r.speedup is not None]
        over_compile = [r.speedup_vs_compile for r in mine if r.speedup_vs_compile is not None]
        scores.append(LevelScore(
            level=level, problems=len(mine), verified=sum(r.verified for r in mine),
            fast={p: fast_p(mine, p) for p in ps}, geomean_speedup=geomean(speedups),
            geomean_vs_compile=geomean(over_compile), geomean_of=len(speedups),
            geomean_vs_compile_of=len(over_compile)))
    return scores


@dataclass(frozen=True)
class ScoreReport:
    """`skillbase kernelbench score`: each problem's times and the scores by level."""
    results: list[ProblemResult]
    reasons: dict[str, str]               # problem -> why its kernel did not verify (or was missing)

    def to_json(self) -> dict:
        from skillbase.documents import versioned

        return versioned("kernelbench-score", {
            "problems": [{"problem": r.problem, "level": r.level, "verified": r.verified, "kernel_us": r.kernel_us,
                          "eager_us": r.eager_us, "compile_us": r.compile_us, "speedup_vs_eager": r.speedup,
                          "speedup_vs_compile": r.speedup_vs_compile, "reason": self.reasons.get(r.problem)}
                         for r in self.results],
            "levels": [s.as_dict() for s in score_levels(self.results)]})


def score_tasks(task_dirs: Sequence[Path], kernel_name: str = "model.cu", compile: bool = True,
                progress=lambda message: None) -> ScoreReport:
    """Time each imported task's kernel (`kernel_name` in its folder: the generator's model.cu, or a
    run's best.cu copied there) and its PyTorch eager (and torch.compile) implementation with the
    harness, each verified against the reference, and score them. Needs a GPU."""
    import json

    from skillbase.harness.runtime import evaluate, require_gpu
    from skillbase.harness.scratch import scratch_copy

    require_gpu()
    results, reasons = [], {}
    for i, folder in enumerate(task_dirs, 1):
        folder = Path(folder)
        facts_path = folder / "problem.json"
        if not facts_path.is_file():
            raise InputError(f"{folder}: no problem.json: not an imported KernelBench task",
                             hint="skillbase kernelbench import PATH --out DIR makes them")
        facts = json.loads(facts_path.read_text())
        problem, level = facts["problem"], int(facts.get("level") or 0)
        progress(f"[{i}/{len(task_dirs)}] {problem}")
        times = time_pytorch(folder, compile=compile)
        kernel = folder / kernel_name
        verified, kernel_us = False, None
        if not kernel.is_file():
            reasons[problem] = f"no {kernel_name} in {folder}"
        else:
            # judged as the task's kernel in a scratch copy of the task: the user's files stay as they are
            done = evaluate(scratch_copy(folder / "model.cu", kernel.read_text()))
            verified = done.status == "ok" and bool(done.correct)
            kernel_us = done.summary().candidate_us if verified else None
            if not verified:
                reasons[problem] = f"{done.status}: {done.reason}"
        results.append(ProblemResult(problem, level, verified, kernel_us, times.get("eager"), times.get("compile")))
    return ScoreReport(results, reasons)


def time_pytorch(folder: Path, compile: bool = True, eager: bool = True) -> dict[str, float | None]:
    """The task's PyTorch implementation (`torch.task.yaml`) verified and timed by the harness, eager and
    through torch.compile: {"eager": µs, "compile": µs} (None where it did not verify; no "compile"
    without `compile`, no "eager" without `eager`), and "<label>_reason" for each that failed. Needs a GPU."""
    from skillbase.harness.runtime import Options, evaluate

    times: dict = {}
    for label, use_compile in (("eager", False), ("compile", True)):
        if not (compile if use_compile else eager):
            continue
        if use_compile:
            times["compile_adapter"] = adapter_of(folder)   # which adapter the figure came through (compile_time)
        done = evaluate(Path(folder) / "torch.task.yaml", candidate=Path(folder) / "kb_task.py",
                        options=Options(torch_compile=use_compile))
        times[label] = done.summary().candidate_us if done.status == "ok" else None
        if done.status != "ok":
            times[f"{label}_reason"] = f"{done.status}: {done.reason}"
    return times


def adapter_of(folder: Path) -> int:
    """The adapter version of an imported task folder (its problem.json; 0 before the numbering)."""
    import json

    try:
        return int(json.loads((Path(folder) / "problem.json").read_text()).get("adapter") or 0)
    except (OSError, ValueError):
        return 0


def compile_time(times: dict) -> tuple[float | None, str | None]:
    """A member's torch.compile time from its recorded PyTorch times (µs), or None and why: a time taken through
    an adapter older than `COMPILE_SOUND_FROM` is eager's and does not count."""
    adapter = int(times.get("compile_adapter") or 1)   # a time recorded without it came through adapter 1
    if times.get("compile") is not None and adapter < COMPILE_SOUND_FROM:
        return None, (f"its torch.compile time ({times['compile']:.1f} µs) came through adapter {adapter}, where "
                      "torch.compile fell back to eager: refresh the task (kernelbench import --refresh) and time it "
                      "again (kernelbench baselines)")
    return times.get("compile"), times.get("compile_reason")
