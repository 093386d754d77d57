"""The loop's evidence source: each round's kernel profiled (on a GPU) or read statically, once.

On a GPU machine the round's kernel is profiled with the metrics the rules read and its evidence is
built from that very build (`skillbase.profiling`); without one, static features and ptxas only.
A saved report of the task's own kernel (`optimize --report`) stands in for profiling the unchanged
baseline: it is used only while the kernel is byte-identical to the task file.

`history` is this run's memory (tried, failed, won, tabu) plus `past`: per-skill outcomes of the
store's other runs ({skill: {tried, accepted, failed, mean_accepted_speedup}}), recorded with the
evidence so `explain` shows what the decision knew. The ranking does not read `past` (outcomes on
other kernels are weak evidence for this one); it reads only this run's memory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillbase.evidence import Evidence, build_evidence
from skillbase.evidence.build import attach_task
from skillbase.harness.scratch import scratch_copy
from skillbase.profiling import profile_evidence


class EvidenceCollector:
    """Profile on a GPU (ncu) when asked; otherwise static features + ptxas only."""

    def __init__(self, task_path: Path, profile: bool, arch: str = "sm_90", preset: str | None = None,
                 saved_report: Path | None = None, metrics: list[str] | None = None,
                 past: Callable[[], dict[str, Any]] = dict):
        self.task_path = task_path
        self.profile = profile
        self.arch = arch
        self.preset = preset
        self.saved_report = saved_report
        self.original = task_path.read_text() if saved_report else None
        self.metrics = metrics      # what ncu collects (None: the built-in rules' list)
        self.past = past            # -> the other runs' per-skill outcomes (RunStore.skill_outcome_stats)

    def evidence(self, source: str, flags: tuple[str, ...], history: dict) -> Evidence:
        # Candidates are written beside nothing the user owns: a content-named copy in the cache.
        path = scratch_copy(self.task_path, source)
        unchanged = source == self.original and not flags
        saved = self.saved_report if unchanged else None
        if self.profile and saved is None:
            # profile_evidence records what the task allows, from the spec beside the copy
            evidence = profile_evidence(path, preset=self.preset, extra_flags=flags, metrics=self.metrics,
                                        write=False).evidence
        else:
            evidence = build_evidence(report=saved, source=path, arch=self.arch)
            # what the task allows (the ranking demotes what it forbids); a saved report names no size, so its
            # work model is left unset with a note
            attach_task(evidence, path)
        return with_history(evidence, history, self.past())


def with_history(evidence: Evidence, history: dict, past: dict[str, Any]) -> Evidence:
    """`evidence` with the run's memory as its history (`past`: the store's other runs' outcomes per skill)."""
    evidence.history = {**history, "past": past}
    return evidence
