"""Profile a kernel with the metrics the rules read, and build its evidence once.

What `skillbase profile`, `advise K.cu`, each profiled round of `optimize` and `skills verify`
share: the harness profiles (it knows neither the engine nor evidence), the engine names the
metrics, and the evidence takes the ptxas report from the very build that was profiled (no second
compile). The evidence JSON is written beside the report (`K.<preset>.evidence.json`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skillbase.evidence.build import attach_task, build_evidence
from skillbase.evidence.model import Evidence
from skillbase.harness.profile import Profile, ncu_version, profile_kernel


@dataclass(frozen=True)
class ProfiledKernel:
    profile: Profile
    evidence: Evidence
    evidence_path: Path | None     # the JSON beside the report, when written


def evidence_path(report: Path) -> Path:
    """`K.default.ncu-rep` -> `K.default.evidence.json`."""
    return report.with_name(report.name[: -len(".ncu-rep")] + ".evidence.json")


def evidence_from_profile(profile: Profile, source: Path, kernel: str | None = None) -> Evidence:
    """The evidence of a profiled kernel: metrics, static features of `source`, the build's ptxas;
    focused on `kernel` (name, substring or regex) when given."""
    evidence = build_evidence(report=profile.report, source=source, ptxas_text=profile.build.log,
                              kernel=kernel, arch=profile.build.arch)
    # a profiled kernel always has its spec beside it; its work model at the preset that was profiled
    attach_task(evidence, source, profile.preset)
    # The report itself records neither; we know both because we ran ncu (calibration provenance).
    evidence.producer["clock_control"] = "none"
    evidence.producer["ncu_version"] = ncu_version()
    return evidence


def profile_evidence(cu_path: str | Path, *, preset: str | None = None, full: bool = False,
                     metrics: list[str] | None = None, out: str | Path | None = None, extra_flags=(),
                     timeout_s: float = 600.0, progress: Callable[[str], None] | None = None,
                     kernel: str | None = None, write: bool = True) -> ProfiledKernel:
    """Profile `cu_path` (with the rule engine's metrics unless `metrics` or `full` say otherwise)
    and build its evidence; write the evidence JSON beside the report when `write`."""
    if metrics is None and not full:
        from skillbase.engine import Engine

        metrics = list(Engine.load().required_ncu_metrics()) or None
    cu_path = Path(cu_path)
    profile = profile_kernel(cu_path, preset=preset, metrics=metrics, full=full, out=out, extra_flags=extra_flags,
                             timeout_s=timeout_s, progress=progress)
    evidence = evidence_from_profile(profile, cu_path, kernel)
    path = None
    if write:
        path = evidence_path(profile.report)
        path.write_text(evidence.to_json())
    return ProfiledKernel(profile=profile, evidence=evidence, evidence_path=path)
