"""Ranking proposals into candidates: deterministic, explainable, history-aware.

Order: skills not yet tried on this kernel first, together with skills that won before and whose rule
fires again on the new profile (experts repeat a step that paid: more stages, more elements per thread,
more warps per row; its rule's estimate is computed on the profile taken after the win, so the part of
the gain already taken is out of it and it is not discounted again: WON_AGAIN), then skills the task
constrains (a constrain rule fired: its tolerance forbids lower precision, it allows no library; the
reason is kept), then skills tried before without a win, then
skills that failed (history is evidence: re-proposing what already failed wastes a round); within a
group by the expected time saved, `score x sqrt(time_saved_fraction)` (desc,
`expected_saving`): a rule's `speedup:` estimate (ncu's word for it) is the share of the run a skill
can save, 0..1, and its `score` is the prior confidence that the evidence means what the rule says,
so a confident 5 % does not outrank a plausible 55 %. A candidate whose estimate could not be
computed (a metric it needs is missing) counts UNKNOWN_SAVED; one computed as 0 is no candidate (the
measurement refutes what the rule suspected: a static stride whose sectors are all used).
Ties: a computed estimate before an assumed one, then score, then skill id. A skill proposed by
several rules keeps the proposal with the largest expected saving and lists every rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .trace import FocusRow

DEMOTION = {None: 0, "won": 0, "task": 1, "tried": 2, "failed": 3}
# The share of its expected saving a skill that already won keeps when its rule fires again. 1: the estimate
# is already the remainder (it reads the new profile); a further discount counted the taken gain twice. On
# the dev set's tune half 5 of 68 expert steps repeat a technique of an earlier step, and at 0.8 three of
# them fell a rank while no step rose (issue 15, round 4).
WON_AGAIN = 1.0
# The share of the run assumed for a candidate whose own estimate needs a missing value [P]: a
# typical single-skill gain, below most computed estimates, so a measured estimate usually wins.
UNKNOWN_SAVED = 0.1


def expected_saving(score: float, time_saved_fraction: float | None) -> float:
    """What the ranking orders by: score x sqrt(estimated share of the run saved). The square root
    keeps the rules' estimates (heuristics, mostly [P]) from swamping the confidence prior, while a
    55 % estimate at score 0.4 (0.30) still outranks a 5 % one at score 0.9 (0.20)."""
    return score * math.sqrt(time_saved_fraction if time_saved_fraction is not None else UNKNOWN_SAVED)


@dataclass
class Candidate:
    skill: str
    score: float
    time_saved_fraction: float | None   # the estimated share of the runtime saved, 0..1 (not a ratio)
    rules: list[str]
    because: str
    focus: list[FocusRow] = field(default_factory=list)
    rank: int = 0
    demoted: str | None = None  # None | "won" | "task" | "tried" | "failed": what the task or history says here
    constraint: str | None = None  # why the task constrains it (a constrain rule's because)
    best_rule: str = ""

    @property
    def expected(self) -> float:
        return expected_saving(self.score, self.time_saved_fraction)

    @property
    def priority(self) -> float:
        """What orders candidates within a group: the expected saving, discounted for a repeat of a win."""
        return self.expected * (WON_AGAIN if self.demoted == "won" else 1.0)

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "skill": self.skill, "score": self.score,
                "time_saved_fraction": self.time_saved_fraction,
                "expected": round(self.expected, 4),
                "rules": self.rules, "best_rule": self.best_rule, "because": self.because,
                "demoted": self.demoted, "constraint": self.constraint,
                "focus": [row.to_json() for row in self.focus]}


def _skill_of(item: Any) -> str | None:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        return item.get("skill") or item.get("id")
    return None


def history_status(history: Any) -> dict[str, str]:
    """skill -> "failed" | "won" | "tried" from `evidence.history` (lists of ids or of {skill: …}
    records); a failure outweighs a win, a win outweighs a bare try."""
    if not isinstance(history, dict):
        return {}
    status: dict[str, str] = {}
    for key in ("tried", "won"):
        for item in history.get(key) or []:
            skill = _skill_of(item)
            if skill:
                status[skill] = key
    for item in history.get("failed") or []:
        skill = _skill_of(item)
        if skill:
            status[skill] = "failed"
    return status


def _demotion(history: str | None, constrained: bool) -> str | None:
    """A skill the task constrains stays constrained even if it won before (the spec has not changed);
    one tried or failed before ranks lower still."""
    if constrained and history in (None, "won"):
        return "task"
    return history


def _order(proposal: dict[str, Any]) -> tuple:
    share = proposal["time_saved_fraction"]
    return (-expected_saving(proposal["score"], share), share is None, -proposal["score"], proposal["rule"])


def rank(proposals: list[dict[str, Any]], history: Any = None,
         constraints: dict[str, str] | None = None) -> list[Candidate]:
    """`proposals`: [{skill, score, time_saved_fraction, rule, because, focus}] from firing propose rules;
    `constraints`: skill -> why the task constrains it (from firing constrain rules)."""
    constraints = constraints or {}
    by_skill: dict[str, list[dict[str, Any]]] = {}
    for proposal in proposals:
        # an estimate the evidence computes as nothing saved is a suspicion the measurement refutes (a static
        # stride whose sectors are all used): no candidate, whatever the prior; an estimate it cannot compute stays
        if proposal["time_saved_fraction"] == 0:
            continue
        by_skill.setdefault(proposal["skill"], []).append(proposal)
    status = history_status(history)
    candidates = []
    for skill, group in by_skill.items():
        group.sort(key=_order)
        best = group[0]
        focus: list[FocusRow] = []
        for proposal in group:  # the best rule's evidence first, then the others'
            focus.extend(proposal["focus"])
        candidates.append(Candidate(skill=skill, score=best["score"],
                                    time_saved_fraction=best["time_saved_fraction"],
                                    rules=sorted({p["rule"] for p in group}), because=best["because"],
                                    focus=focus, best_rule=best["rule"], constraint=constraints.get(skill),
                                    demoted=_demotion(status.get(skill), skill in constraints)))
    candidates.sort(key=lambda c: (DEMOTION[c.demoted], -c.priority, c.time_saved_fraction is None, -c.score, c.skill))
    for index, candidate in enumerate(candidates, 1):
        candidate.rank = index
    return candidates
