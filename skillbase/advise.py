"""Advice for one kernel: the evidence, the rule engine's ranked skills, and why a skill was not proposed.

The library entry point behind `skillbase advise`, for notebooks as much as for the CLI:

    from skillbase.advise import advise, why_not
    advice = advise(report="K.ncu-rep", source="K.cu")      # or evidence="E.json", or source="K.cu" alone
    advice.result.candidates[0].skill
    why_not(advice, "mem.coalesce")

The evidence comes from exactly one of: a saved Nsight Compute report (`report`, with the kernel's
`source` for static features), an evidence JSON document or `Evidence` (`evidence`), or a kernel
source alone (`source`), which is profiled first (GPU machines only). Loading a report must stay
fast (`advise --report` in well under a second): the ncu reader is imported only when used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillbase.datafile.problems import did_you_mean
from skillbase.engine import Engine
from skillbase.engine.evaluate import EvaluationResult
from skillbase.engine.trace import result_name
from skillbase.errors import EnvironmentProblem, InputError
from skillbase.evidence import Evidence, load_any, load_evidence_json
from skillbase.evidence.build import attach_source, checked_preset

__all__ = ["Advice", "advise", "evidence_for", "why_not"]

ONE_INPUT = ("give one input: a report (with or without the kernel's source), an evidence document, or a source",
             "advise(report=R.ncu-rep[, source=K.cu]), advise(evidence=E.json) or advise(source=K.cu)")


@dataclass
class Advice:
    evidence: Evidence              # what the rules read
    result: EvaluationResult        # facts, ranked candidates, every rule's decision
    engine: Engine                  # the rule set that evaluated it (why_not reads its rules)
    notes: list[str] = field(default_factory=list)   # where the evidence came from


def _exists(path: str | Path, what: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such {what}", "check the path")
    return p


def evidence_for(report: str | Path | None = None, evidence: str | Path | Evidence | None = None,
                 source: str | Path | None = None, kernel: str | None = None,
                 preset: str | None = None) -> tuple[Evidence, list[str]]:
    """(the evidence, notes on where it came from) from one of a report (+ source), an evidence
    document, or a source alone (profiled). `kernel` picks the focus kernel of a report or profile;
    `preset`, a size of the task spec beside the source, is the size a source is profiled at (default: its
    first scored preset) or the one a report was taken at (which sets the task's work model)."""
    given = [x for x in (report, evidence) if x is not None]
    if len(given) > 1 or (evidence is not None and source is not None):
        raise InputError(*ONE_INPUT)
    if preset is not None:
        if source is None:
            raise InputError("a preset is a size of the kernel's task: give its source, the spec lies beside it",
                             "`advise --report R.ncu-rep --source K.cu --preset P` or `advise K.cu --preset P`; "
                             "an evidence document carries its work model already")
        checked_preset(_exists(source, "source file"), preset)
    if isinstance(evidence, Evidence):
        return evidence, ["evidence given as an Evidence object"]
    if evidence is not None:
        path = _exists(evidence, "evidence file")
        return load_evidence_json(path), [f"evidence from {path}"]
    if report is not None:
        path = _exists(report, "report")
        cu = _exists(source, "source file") if source is not None else None
        loaded = load_any(path, kernel)
        notes = [f"profile from {path}"]
        if cu is not None:
            attach_source(loaded, cu, preset)
            notes.append(f"static features from {cu}" + (f", the task's work model at {preset}" if preset else ""))
        return loaded, notes
    if source is None:
        raise InputError(*ONE_INPUT)
    cu = _exists(source, "kernel source")
    from skillbase.profiling import profile_evidence  # the harness: only when profiling

    try:
        profiled = profile_evidence(cu, preset=preset, kernel=kernel, write=False)
    except EnvironmentProblem as problem:
        # Profiling needs a GPU and ncu; advice from a saved profile does not.
        raise EnvironmentProblem(f"cannot profile {cu} here: {problem.message}",
                                 "run on a GPU machine with ncu, or pass --report R.ncu-rep / --evidence E.json"
                                 ) from None
    return profiled.evidence, [f"profiled {cu} (report {profiled.profile.report})"]


def advise(report: str | Path | None = None, evidence: str | Path | Evidence | None = None,
           source: str | Path | None = None, kernel: str | None = None, *,
           thresholds: str | Path | None = None, rules_dirs: list[str | Path] | None = None,
           extra_rules: tuple[str | Path, ...] | list[str | Path] = (), preset: str | None = None) -> Advice:
    """Rank expert skills for one kernel (see the module's docstring for the three inputs).

    `thresholds`: a thresholds file (default: ncu's); `rules_dirs`: rule folders instead of the
    built-in ones; `extra_rules`: rule folders added to them. `kernel` focuses the evaluation on
    that kernel (a name, substring or regex). `preset`: the size preset of the task spec beside the
    source that a source is profiled at, or that a report was taken at (`evidence_for`)."""
    loaded, notes = evidence_for(report, evidence, source, kernel, preset)
    engine = Engine.load(list(rules_dirs) if rules_dirs else None, thresholds, extra_rules=extra_rules)
    _note_missing_metrics(loaded, engine)
    # A report or profile was focused when it was loaded; an evidence document is focused here.
    result = engine.evaluate(loaded, kernel=kernel if evidence is not None else None)
    return Advice(loaded, result, engine, notes)


def _note_missing_metrics(evidence: Evidence, engine: Engine) -> None:
    """Say once when the profile lacks metrics the rules read (a report made with a few sections):
    the rules that need them stay quiet, and the user should know why."""
    record = evidence.focus()
    if record is None:
        return
    wanted = engine.required_ncu_metrics()
    absent = [name for name in wanted if name not in record.metrics]
    if absent and len(absent) * 5 >= len(wanted):      # a fifth or more: more than a metric ncu skips
        evidence.notes.append(f"the profile lacks {len(absent)} of the {len(wanted)} metrics the rules read "
                              f"(e.g. {', '.join(absent[:3])}): rules that need them stay quiet; "
                              "profile with `skillbase profile` or `ncu --set full`")


def why_not(advice_or_engine: Advice | Engine, skill: str, result: EvaluationResult | None = None) -> dict[str, Any]:
    """Why `skill` was not proposed (or ranked where it was): the rules that could propose it,
    whether each fired, and its false or missing leaves. Pass an `Advice`, or an `Engine` with
    the `result` it produced."""
    if isinstance(advice_or_engine, Advice):
        engine, result = advice_or_engine.engine, advice_or_engine.result
    else:
        engine = advice_or_engine
        if result is None:
            raise TypeError("why_not(engine, skill, result): the engine's EvaluationResult is needed")
    rules = [r for r in engine.propose_rules if any(p.skill == skill for p in r.proposes)]
    if not rules:
        proposable = {p.skill for r in engine.propose_rules for p in r.proposes}
        raise InputError(f"no rule proposes `{skill}`",
                         did_you_mean(skill, proposable, n=3) or "see `skillbase skills list` for the skill ids")
    candidate = next((c for c in result.candidates if c.skill == skill), None)
    out: dict[str, Any] = {"skill": skill, "proposed": candidate is not None,
                           "rank": candidate.rank if candidate else None, "rules": []}
    for rule in rules:
        decision = result.decision(rule.id)
        out["rules"].append({"rule": rule.id, "fired": decision.fired, "result": result_name(decision.result),
                             "source": decision.source, "summary": decision.summary, "because": decision.because,
                             "failed": [leaf.to_json() for leaf in decision.failed_leaves()]})
    return out
