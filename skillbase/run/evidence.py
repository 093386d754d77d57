"""The loop's evidence source: each round's kernel profiled (on a GPU) or read statically, once.

On a GPU machine the round's kernel is profiled with the metrics the rules read and its evidence is
built from that very build (`skillbase.profiling`); without one, static features and ptxas only.
A saved report of the task's own kernel (`optimize --report`) stands in for profiling the unchanged
baseline: it is used only while the kernel is byte-identical to the task file.

`history` is this run's memory (tried, failed, won, tabu) plus `past`: per-skill outcomes of the
store's other runs ({skill: {tried, accepted, failed, mean_accepted_speedup}}), recorded with the
evidence so `explain` shows what the decision knew. The ranking does not read `past` (outcomes on
other kernels are weak evidence for this one); it reads only this run's memory.

`with_todays_static` is what a round decided again from its stored evidence (`redecide`, `resume
--more-rounds`) reads: that evidence with the static source features of the round's kernel recomputed by
today's analyser, so a fix to the analyser reaches the stored rounds too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from skillbase import __version__
from skillbase.errors import InputError
from skillbase.evidence import Evidence, build_evidence, static_features
from skillbase.evidence.build import NO_SOURCE_KERNEL, align_names, attach_task, profiled_instances
from skillbase.harness import env
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


STATIC_REFRESH = "static_refresh"    # the producer's key: what `with_todays_static` did to a stored round's evidence
SHOWN_CHANGES = 4                    # changed features a note names
RECOMPUTED = "static features recomputed from the round's kernel"    # how the notes it writes begin
KEPT = "static features as the round recorded them"


def with_todays_static(evidence: Evidence, task_path: Path, source: str) -> Evidence:
    """A stored round's `evidence` with the static features of `source` (the kernel the round started from, of
    the task at `task_path`) recomputed by today's analyser, as the loop computes them when it profiles
    (`build_evidence`: the kernel's scratch copy, the profiled template instances, the names aligned).

    Everything measured (the ncu metrics, timing, the roofline) and ptxas's resources stay as stored: the
    ptxas facts come from the run's own nvcc and flags on its machine, which a re-decision elsewhere may not
    have, and a compiler's report does not go stale when the analyser is fixed. Features equal to the stored
    ones (the path of the scratch copy aside: another machine's cache) leave `evidence` as it is. Otherwise
    a copy is returned, its `producer["static_refresh"]` saying by which skillbase, from what the round
    recorded, and which of the focus kernel's features changed, with one note to say so. An analyser that
    cannot read the kernel (InputError) leaves the stored features, with a one-line note and the reason in
    `producer["static_refresh"]["failed"]`; a bug in the analyser raises, as it does in the loop."""
    by = {"by": f"skillbase {__version__}", "git": env.git_revision()}
    try:
        today = static_features(scratch_copy(task_path, source), instances=profiled_instances(evidence))
    except InputError as error:
        return _marked(evidence, evidence.static, {**by, "failed": error.message},
                       f"{KEPT} (today's analyser cannot read the round's kernel: {error.message})")
    fresh = replace(evidence, static=today, ptxas=dict(evidence.ptxas) if evidence.ptxas is not None else None,
                    notes=[n for n in evidence.notes if not n.startswith(NO_SOURCE_KERNEL)])
    align_names(fresh)     # the focus kernel's alias key, as the loop adds it (and its note, if the source lacks it)
    if evidence.static is not None and _without_path(today) == _without_path(evidence.static):
        return evidence
    changed = _changes(evidence.static, fresh.static, evidence.focus_kernel)
    recorded = (evidence.producer.get(STATIC_REFRESH) or {}).get("recorded_by") or evidence.producer.get("tool")
    shown = "; ".join(changed[:SHOWN_CHANGES]) + (f"; {len(changed) - SHOWN_CHANGES} more"
                                                 if len(changed) > SHOWN_CHANGES else "")
    return _marked(fresh, today, {**by, "recorded_by": recorded, "changed": changed},
                   f"{RECOMPUTED} by {by['by']} (git {by['git']}), not those {recorded} recorded: {shown}; "
                   "the ncu metrics, timing and ptxas are the round's own")


def static_refresh_line(producer: dict[str, Any]) -> str | None:
    """One line on what `with_todays_static` did to the evidence of `producer` (an evidence document's
    producer block; None: its static features are the round's own)."""
    done = producer.get(STATIC_REFRESH)
    if not isinstance(done, dict):
        return None
    if "failed" in done:
        return f"the round's own (today's analyser cannot read its kernel: {done['failed']})"
    changed = done.get("changed") or []
    return (f"recomputed by {done.get('by')}: " + "; ".join(changed[:SHOWN_CHANGES])
            + (f"; {len(changed) - SHOWN_CHANGES} more" if len(changed) > SHOWN_CHANGES else ""))


def _marked(evidence: Evidence, static: dict | None, record: dict, note: str) -> Evidence:
    """`evidence` (a copy) with `static`, its producer's refresh `record` and `note` (once)."""
    notes = [n for n in evidence.notes if not n.startswith((RECOMPUTED, KEPT))] + [note]   # an earlier one replaced
    return replace(evidence, static=static, producer={**evidence.producer, STATIC_REFRESH: record}, notes=notes)


def _without_path(static: dict) -> dict:
    """Static features less the analysed file's path (a scratch copy in the cache of whichever machine)."""
    return {**static, "file": {k: v for k, v in (static.get("file") or {}).items() if k != "path"}}


def _changes(before: dict | None, after: dict, focus: str | None) -> list[str]:
    """The focus kernel's features that differ (`global_access.pointer_inputs 3 -> 2`; `absent` where a
    side has none), or where else the static features differ."""
    if before is None:
        return ["none were recorded"]
    old, new = ((side.get("kernels") or {}).get(focus) for side in (before, after))
    if not isinstance(old, dict) or not isinstance(new, dict):
        return [f"the focus kernel {focus} {'found' if isinstance(new, dict) else 'not found'} in the source now"]
    was, now = _leaves(old), _leaves(new)
    changed = [f"{key} {_shown(was, key)} -> {_shown(now, key)}" for key in sorted(was.keys() | now.keys())
               if was.get(key, _ABSENT) != now.get(key, _ABSENT)]
    return changed or ["other kernels' or the launchers' features (the focus kernel's are the same)"]


_ABSENT = object()


def _leaves(features: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in features.items():
        if isinstance(value, dict):
            out.update(_leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _shown(leaves: dict[str, Any], key: str) -> str:
    if key not in leaves:
        return "absent"
    text = json.dumps(leaves[key], sort_keys=True, default=str)
    return text if len(text) <= 40 else text[:37] + "..."
