"""Wire a run: the task, the harness (judge + evidence), the engine's decision and the agent mode.

`start_run()` creates a run with its manifest and executes the loop; `resume_run()` rebuilds the
same collaborators from the run's manifest and continues from the last finished step.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from skillbase import __version__
from skillbase.run.loop import LoopState, MechanicalApplier, Settings, Verdict

AGENTS = ("openai", "external", "none")


# -- judges --------------------------------------------------------------------------------------

class CompileOnlyJudge:
    """For machines without a GPU: builds and statically checks candidates, never claims a speedup.

    Every candidate that compiles and passes the static check is `unverified`, which the loop never
    accepts, so a CPU-only run exercises the whole pipeline up to the compile step honestly.
    """

    def __init__(self, task_path: Path, arch: str = "sm_90", allow: tuple[str, ...] = (),
                 hooks: tuple[str, ...] = (), link: tuple[str, ...] = ()):
        self.task_path = task_path
        self.arch = arch
        self.allow = allow
        self.hooks = hooks      # the spec's setup/teardown functions (the static check exempts their bodies)
        self.link = link

    def _compile(self, source: str, flags: tuple[str, ...]) -> Verdict | None:
        from skillbase.harness.build import BuildError, build
        from skillbase.harness.static_check import check_source, errors_only

        violations = errors_only(check_source(source, allow=self.allow, hooks=self.hooks))
        if violations:
            first = violations[0]
            return Verdict(status="rejected-static", reason=f"line {first.line}: {first.rule}: {first.rationale}")
        path = _scratch_copy(self.task_path, source)
        try:
            build(path, arch=self.arch, compile_only=True, extra_flags=flags, link=self.link)
        except BuildError as error:
            return Verdict(status="build-failed", reason=error.message, details=getattr(error, "log", "") or error.message)
        return None

    def baseline(self, source: str) -> Verdict:
        failure = self._compile(source, ())
        return failure or Verdict(status="unverified", reason="compiled (no GPU: not timed)")

    def judge(self, source, flags, best_source, best_flags) -> Verdict:
        failure = self._compile(source, flags)
        return failure or Verdict(status="unverified", reason="compiled and passed the static check; no GPU to verify or time it")


class HarnessJudge:
    """The real judge on a GPU machine: the harness's interleaved verify-and-time comparison."""

    def __init__(self, task_path: Path, preset: str | None = None):
        from skillbase.harness import compare  # noqa: F401  (fails early when the harness is absent)

        self.task_path = task_path
        self.preset = preset

    def baseline(self, source: str) -> Verdict:
        from skillbase.harness.compare import time_baseline

        return time_baseline(self.task_path, source, preset=self.preset)

    def judge(self, source, flags, best_source, best_flags) -> Verdict:
        from skillbase.harness.compare import compare_candidate

        return compare_candidate(self.task_path, candidate_source=source, candidate_flags=flags,
                                 best_source=best_source, best_flags=best_flags, preset=self.preset)


def _scratch_copy(task_path: Path, source: str) -> Path:
    """Candidates are written beside nothing the user owns: a content-named copy in the cache."""
    from skillbase.harness.compare import scratch_copy

    return scratch_copy(task_path, source)


# -- the decision ---------------------------------------------------------------------------------

def make_decide(agent: str, engine, corpus, mechanical_applier: MechanicalApplier) \
        -> Callable[[Any, LoopState], tuple[list[dict], str]]:
    """Engine ranking -> candidate dicts, each marked applicable or not in this agent mode."""

    def decide(evidence, state: LoopState) -> tuple[list[dict], str]:
        result = engine.evaluate(evidence)
        candidates = []
        for cand in result.candidates:
            skill = corpus.get(cand.skill) if corpus is not None else None
            auto = _auto_apply(skill)
            applicable = auto and (agent != "none" or mechanical_applier.applicable(cand.skill, state.best_source))
            candidates.append({"skill": cand.skill, "score": cand.score, "speedup": cand.speedup,
                               "rules": list(cand.rules), "because": cand.because,
                               "focus": [f if isinstance(f, dict) else _row(f) for f in (cand.focus or [])],
                               "applicable": applicable, "params": {}})
        # Without an LLM the sweep is always on offer when the kernel declares tunables.
        if agent == "none" and not any(c["skill"] == "tune.parameter_sweep" for c in candidates) \
                and mechanical_applier.applicable("tune.parameter_sweep", state.best_source):
            candidates.append({"skill": "tune.parameter_sweep", "score": 0.0, "speedup": None, "rules": [],
                               "because": "the kernel declares tunables (mechanical mode offers a sweep)",
                               "focus": [], "applicable": True, "params": {}})
        return candidates, json.dumps(result.to_json(), sort_keys=True, default=str)

    return decide


def _auto_apply(skill) -> bool:
    if skill is None:
        return True
    data = skill if isinstance(skill, dict) else getattr(skill, "data", {})
    automation = data.get("automation") or {}
    return automation.get("auto_apply", True) is not False


def _row(focus) -> dict:
    return {k: getattr(focus, k, None) for k in ("name", "observed", "threshold")}


# -- manifest -------------------------------------------------------------------------------------

def manifest(task_path: Path, settings: Settings, engine, corpus_digest: str | None, endpoint: str | None,
             profile: bool) -> dict:
    return {
        "skillbase_version": __version__,
        "git": _git_hash(),
        "task_path": str(task_path.resolve()),
        "task_digest": hashlib.sha256(task_path.read_bytes()).hexdigest()[:16],
        "agent": settings.agent,
        "model": settings.model if settings.agent == "openai" else None,
        "endpoint": endpoint,
        "settings": asdict(settings),
        "rules_digest": getattr(engine, "rules_digest", None),
        "vocabulary_digest": getattr(engine, "vocabulary_digest", None),
        "thresholds": getattr(engine, "thresholds_path", None),
        "corpus_digest": corpus_digest,
        "gpu": _gpu_name(),
        "driver": _query_gpu("driver_version"),
        "nvcc": _nvcc_version(),
        "python": platform.python_version(),
        "profiled": profile,
    }


def _git_hash() -> str | None:
    root = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _query_gpu(field: str) -> str | None:
    from skillbase.harness.runtime import query_gpu

    return query_gpu(field)


def _gpu_name() -> str | None:
    return _query_gpu("name")


def _nvcc_version() -> str | None:
    """The last line of `nvcc --version` (the build's cached query), or None without nvcc."""
    from skillbase.errors import SkillbaseError
    from skillbase.harness.build import _nvcc_version as build_nvcc_version, nvcc_path

    try:
        lines = build_nvcc_version(nvcc_path()).splitlines()
    except SkillbaseError:
        return None
    return lines[-1] if lines else None
