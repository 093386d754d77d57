"""The loop's judges: a candidate source against the current best, as a `Verdict`.

`HarnessJudge` (a GPU machine) runs the harness's interleaved verify-and-time comparison and maps
its `CheckResult` to a `Verdict`: the candidate is verified against the task's reference (the
original kernel unless the spec names another) and timed interleaved with the current best in one
worker process; it is `accepted` only when the speedup clears the measured spread at the timed
sizes and nothing looked suspicious. `CompileOnlyJudge` (no GPU) builds and statically checks.

Sources are judged from scratch copies in the cache (`skillbase.harness.scratch`), never beside the
user's files. The task spec's `link:` and `hooks:` apply to the candidate and, by default, to the
best (another version of the same kernel); `best_task` names the spec of a best that is a different
kernel (the bench times a vendor library against its operator's baseline kernel, which has its own spec).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillbase.errors import EnvironmentProblem, InputError
from skillbase.harness.build import BuildError, build
from skillbase.harness.result import CheckResult
from skillbase.harness.runtime import Options, candidate_build, evaluate
from skillbase.harness.scratch import scratch_copy
from skillbase.harness.static_check import check_source, errors_only
from skillbase.run.types import Status, Verdict
from skillbase.task import TaskSpec, load_task, spec_path_for

# CheckResult.status -> Verdict.status (the repairable ones: build-failed, incorrect, crashed).
STATUS_OF_CHECK = {
    "build-failed": Status.BUILD_FAILED, "load-failed": Status.BUILD_FAILED, "rejected-static": Status.REJECTED_STATIC,
    "incorrect": Status.INCORRECT, "crashed": Status.CRASHED,
    "timeout": Status.CRASHED, "quarantined": Status.QUARANTINED,
}


class CompileOnlyJudge:
    """For machines without a GPU: builds and statically checks candidates, never claims a speedup.

    Every candidate that compiles and passes the static check is `unverified`, which the loop never
    accepts, so a CPU-only run exercises the whole pipeline up to the compile step honestly.
    """

    def __init__(self, task_path: Path, arch: str = "sm_90", allow: tuple[str, ...] = (),
                 hooks: tuple[str, ...] = (), link: tuple[str, ...] = (), task_arch: str | None = None):
        self.task_path = task_path
        self.arch = arch
        self.task_arch = task_arch   # the spec's arch: (sm_90a refines the default sm_90)
        self.allow = allow
        self.hooks = hooks      # the spec's setup/teardown functions (the static check exempts their bodies)
        self.link = link

    def _compile(self, source: str, flags: tuple[str, ...]) -> Verdict | None:
        violations = errors_only(check_source(source, allow=self.allow, hooks=self.hooks))
        if violations:
            first = violations[0]
            return Verdict(status=Status.REJECTED_STATIC, reason=f"line {first.line}: {first.rule}: {first.rationale}")
        try:
            build(**self._request(source, flags))
        except BuildError as error:
            return Verdict(status=Status.BUILD_FAILED, reason=error.message, details=error.log or error.message)
        return None

    def build_request(self, source: str, flags: tuple[str, ...]) -> dict[str, Any] | None:
        """The `build()` arguments with which this judge builds `source` (None: the static check stops it first)."""
        if errors_only(check_source(source, allow=self.allow, hooks=self.hooks)):
            return None
        return self._request(source, flags)

    def _request(self, source: str, flags: tuple[str, ...]) -> dict[str, Any]:
        return {"cu_path": scratch_copy(self.task_path, source), "arch": self.arch, "compile_only": True,
                "extra_flags": tuple(flags), "link": self.link, "task_arch": self.task_arch}

    def baseline(self, source: str) -> Verdict:
        failure = self._compile(source, ())
        return failure or Verdict(status=Status.UNVERIFIED, reason="compiled (no GPU: not timed)")

    def judge(self, source, flags, best_source, best_flags) -> Verdict:
        failure = self._compile(source, flags)
        return failure or Verdict(status=Status.UNVERIFIED,
                                  reason="compiled and passed the static check; no GPU to verify or time it")


class HarnessJudge:
    """The real judge on a GPU machine: the harness's interleaved verify-and-time comparison."""

    def __init__(self, task_path: Path, preset: str | None = None):
        self.task_path = task_path
        self.preset = preset

    def build_request(self, source: str, flags: tuple[str, ...]) -> dict[str, Any] | None:
        """The `build()` arguments with which `evaluate` builds `source` as this judge's candidate (None: it
        builds nothing), asked of the harness (`candidate_build`), which `evaluate` builds by."""
        spec = load_task(self.task_path, check_launcher=False)
        return candidate_build(spec, scratch_copy(self.task_path, source), Options(extra_flags=tuple(flags)))

    def baseline(self, source: str) -> Verdict:
        return time_baseline(self.task_path, source, preset=self.preset)

    def judge(self, source, flags, best_source, best_flags) -> Verdict:
        return compare_candidate(self.task_path, candidate_source=source, candidate_flags=flags,
                                 best_source=best_source, best_flags=best_flags, preset=self.preset)


def judge_for(task_path: Path, spec: TaskSpec, gpu: bool, preset: str | None = None) -> CompileOnlyJudge | HarnessJudge:
    """A run's judge: the harness on a GPU machine, else compile-only under the task spec's static-check
    exemptions, link and arch (`spec` is the task's, loaded by the caller)."""
    if gpu:
        return HarnessJudge(task_path, preset=preset)
    return CompileOnlyJudge(task_path, allow=spec.allow, hooks=spec.hook_names, link=spec.link, task_arch=spec.arch)


def verdict_of(result: CheckResult) -> Verdict:
    """The loop's reading of a harness result; a missing GPU or CuPy is an EnvironmentProblem, not a verdict."""
    if result.status == "environment":
        raise EnvironmentProblem(result.reason)
    if result.status == "spec-error":
        # The task, not the candidate: its reference (all zeros, constant, below the tolerance) or spec cannot
        # tell a right kernel from a wrong one, whatever kernel is judged; a repair prompt would blame the kernel.
        raise InputError(f"the task cannot judge a kernel: {result.reason}",
                         hint="change the task's sizes or inputs so that its reference tells kernels apart "
                              "(docs/harness.md, 'Spec sanity'), then `skillbase resume`")
    details, phases = result.log or "", dict(result.phases_s)    # where the time went, gpu_wait among it
    memory = dict(result.memory)
    if result.status != "ok":
        timing = result.summary()
        return Verdict(status=STATUS_OF_CHECK.get(result.status, Status.CRASHED), reason=result.reason,
                       runtime_us=timing.candidate_us if result.status == "quarantined" else None, details=details,
                       phases_s=phases, memory=memory)
    runtime_us, baseline_us, speedup, spread, verdicts = result.summary()
    if baseline_us is None:
        return Verdict(status=Status.ACCEPTED, reason="verified and timed", runtime_us=runtime_us, spread=spread,
                       details=details, phases_s=phases, memory=memory)
    faster = speedup is not None and speedup > 1 and "slower" not in verdicts and "faster" in verdicts
    reason = (f"{speedup:.3f}x vs the current best ({', '.join(verdicts)} per size; spread {spread:.1%})"
              if speedup is not None else "no timing")
    return Verdict(status=Status.ACCEPTED if faster else Status.SLOWER,
                   reason=reason if faster else f"no speedup beyond the measured spread: {reason}",
                   runtime_us=runtime_us, baseline_us=baseline_us, speedup=speedup, spread=spread, details=details,
                   phases_s=phases, memory=memory)


def time_baseline(task_path: Path, source: str, preset: str | None = None) -> Verdict:
    """Verify and time the starting kernel (against its reference) -> Verdict with runtime_us."""
    path = scratch_copy(Path(task_path), source)
    result = evaluate(task_path, candidate=path, options=Options(preset=preset))
    return verdict_of(result)


def compare_candidate(task_path: Path, candidate_source: str, candidate_flags=(), best_source: str | None = None,
                      best_flags=(), preset: str | None = None, best_task: Path | None = None) -> Verdict:
    """Verify the candidate and time it interleaved with the current best -> Verdict.

    `best_task`: the kernel (.cu, spec beside it) whose spec describes `best_source`, when the best
    is not a version of the task's kernel; its `link:` and `hooks:` then apply to the best."""
    task_path = Path(task_path)
    candidate = scratch_copy(task_path, candidate_source)
    best = None
    if best_source is not None:
        best = scratch_copy(spec_path_for(best_task)[0] if best_task is not None else task_path, best_source)
    result = evaluate(task_path, candidate=candidate, baseline=best,
                      options=Options(preset=preset, extra_flags=tuple(candidate_flags)),
                      baseline_flags=tuple(best_flags),
                      baseline_task=spec_path_for(best_task)[1] if best_task is not None else None)
    return verdict_of(result)
