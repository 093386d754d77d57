"""The optimisation loop's judge: a candidate source against the current best, as a `Verdict`.

`skillbase.run.judges.HarnessJudge` calls these two functions. Sources are written to a content-named
folder in the cache (never beside the user's files) with the task spec copied next to them. The
candidate is verified against the task's reference (the original kernel unless the spec names
another) and timed interleaved with the current best in one worker process; it is `accepted` only
when the speedup clears the measured spread at the timed sizes and nothing looked suspicious.

The task spec's `link:` and `hooks:` apply to the candidate and, by default, to the best (another
version of the same kernel). `best_task` names the spec of a best that is a different kernel (the
bench times a vendor library against its operator's baseline kernel, which has its own spec).
"""

from __future__ import annotations

import hashlib
import math
import shutil
from pathlib import Path

from skillbase.errors import EnvironmentProblem
from skillbase.harness.result import CheckResult
from skillbase.harness.runtime import Options, evaluate
from skillbase.config import cache_root

# CheckResult.status -> the loop's Verdict.status (REPAIRABLE there: build-failed, incorrect, crashed).
_STATUS = {"build-failed": "build-failed", "load-failed": "build-failed", "rejected-static": "rejected-static",
           "incorrect": "incorrect", "spec-error": "incorrect", "crashed": "crashed", "timeout": "crashed",
           "quarantined": "quarantined"}


def scratch_copy(task_path: Path, source: str, tag: str = "") -> Path:
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    root = cache_root()
    folder = root / "candidates" / digest
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / task_path.name
    if not path.exists() or path.read_text() != source:
        path.write_text(source)
    spec = task_path.with_name(task_path.stem + ".task.yaml")
    if spec.exists():
        copy_spec(spec, folder / spec.name)
    return path


def copy_spec(spec: Path, target: Path) -> None:
    """Copy a task spec together with the files it names (a python or CUDA reference, input
    hooks), so the copy loads, verifies and profiles exactly like the original."""
    shutil.copyfile(spec, target)
    for name in spec_files(spec):
        if (spec.parent / name).is_file():
            (target.parent / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(spec.parent / name, target.parent / name)


def spec_files(spec_path: Path) -> list[str]:
    """Files a task spec refers to, relative to it: reference.python / reference.cuda (with that
    kernel's own spec), and every init hook. Unreadable specs name nothing (load_task reports them)."""
    import yaml

    try:
        data = yaml.safe_load(Path(spec_path).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return []
    names: list[str] = []
    reference = data.get("reference") if isinstance(data, dict) else None
    if isinstance(reference, dict):
        if isinstance(reference.get("python"), str):
            names.append(reference["python"].rpartition(":")[0])
        if isinstance(reference.get("cuda"), str):
            cuda = reference["cuda"]
            names += [cuda, str(Path(cuda).with_suffix("")) + ".task.yaml"]
    for arg in (data.get("args") or []) if isinstance(data, dict) else []:
        init = arg.get("init") if isinstance(arg, dict) else None
        if isinstance(init, dict) and isinstance(init.get("hook"), str):
            names.append(init["hook"].rpartition(":")[0])
    return [n for n in dict.fromkeys(names) if n and not Path(n).is_absolute() and ".." not in Path(n).parts]


def _verdict(result: CheckResult, baseline_label: str = "baseline"):
    from skillbase.run.loop import Verdict

    if result.status == "environment":
        raise EnvironmentProblem(result.reason)
    details = result.log or ""
    if result.status != "ok":
        timing = _summary(result)
        return Verdict(status=_STATUS.get(result.status, "crashed"), reason=result.reason,
                       runtime_us=timing[0] if result.status == "quarantined" else None, details=details)
    runtime_us, baseline_us, speedup, spread, verdicts = _summary(result)
    if baseline_us is None:
        return Verdict(status="accepted", reason="verified and timed", runtime_us=runtime_us, spread=spread,
                       details=details)
    faster = speedup is not None and speedup > 1 and "slower" not in verdicts and "faster" in verdicts
    reason = (f"{speedup:.3f}x vs the current best ({', '.join(verdicts)} per size; spread {spread:.1%})"
              if speedup is not None else "no timing")
    return Verdict(status="accepted" if faster else "slower",
                   reason=reason if faster else f"no speedup beyond the measured spread: {reason}",
                   runtime_us=runtime_us, baseline_us=baseline_us, speedup=speedup, spread=spread, details=details)


def _summary(result: CheckResult):
    """Geometric means over the timed sizes: (candidate us, baseline us, speedup, spread, per-size verdicts)."""
    cands, bases, verdicts, spreads = [], [], [], []
    for t in result.timings:
        c = t.kernels.get("candidate")
        b = t.kernels.get("baseline")
        if c and c.stats:
            cands.append(c.stats.median_us)
            spreads.append(c.stats.rel_spread)
        if b and b.stats:
            bases.append(b.stats.median_us)
            spreads.append(b.stats.rel_spread)
        if t.verdict:
            verdicts.append(t.verdict)
    gmean = (lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs and all(x > 0 for x in xs) else None)
    cand, base = gmean(cands), gmean(bases)
    speedup = base / cand if cand and base else None
    return cand, base, speedup, (max(spreads) if spreads else None), verdicts


def time_baseline(task_path: Path, source: str, preset: str | None = None):
    """Verify and time the starting kernel (against its reference) -> Verdict with runtime_us."""
    path = scratch_copy(Path(task_path), source)
    result = evaluate(task_path, candidate=path, options=Options(preset=preset))
    return _verdict(result)


def compare_candidate(task_path: Path, candidate_source: str, candidate_flags=(), best_source: str | None = None,
                      best_flags=(), preset: str | None = None, best_task: Path | None = None):
    """Verify the candidate and time it interleaved with the current best -> Verdict.

    `best_task`: the kernel (.cu, spec beside it) whose spec describes `best_source`, when the best
    is not a version of the task's kernel; its `link:` and `hooks:` then apply to the best."""
    from skillbase.task.spec import spec_path_for

    task_path = Path(task_path)
    candidate = scratch_copy(task_path, candidate_source)
    best = None
    if best_source is not None:
        best = scratch_copy(spec_path_for(best_task)[0] if best_task is not None else task_path, best_source)
    result = evaluate(task_path, candidate=candidate, baseline=best,
                      options=Options(preset=preset, extra_flags=tuple(candidate_flags)),
                      baseline_flags=tuple(best_flags),
                      baseline_task=spec_path_for(best_task)[1] if best_task is not None else None)
    return _verdict(result)
