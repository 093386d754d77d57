"""The run's typed contracts: what the loop, the decision, the judges and the appliers hand each other.

The loop asks a `Judge` for `Verdict`s, an `EvidenceSource` for each round's `Evidence`, the decision
for ranked `Candidate`s and an `Applier` for `Produced` code (or a `Paused` request). The store
persists these as JSON (step results, rows); the statuses are `StrEnum`s, so what is stored and
printed is the plain string it always was (`accepted`, `build-failed`, ...).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from skillbase.errors import InputError

if TYPE_CHECKING:
    from skillbase.evidence.model import Evidence


class Status(StrEnum):
    """What became of one attempt: the judge's verdict, or why there was nothing to judge."""

    ACCEPTED = "accepted"                # verified and faster than the current best beyond the spread
    SLOWER = "slower"                    # verified, no speedup beyond the measured spread
    INCORRECT = "incorrect"              # outputs outside tolerance (or an unusable spec)
    BUILD_FAILED = "build-failed"        # nvcc failed, or the library would not load
    CRASHED = "crashed"                  # the worker died or hung
    REJECTED_STATIC = "rejected-static"  # the static check found a banned API or pattern
    QUARANTINED = "quarantined"          # timed faster than the roofline allows: never a win
    UNVERIFIED = "unverified"            # compiled, but no GPU to verify or time it (never accepted)
    NO_CODE = "no-code"                  # the agent answered without a usable kernel
    LLM_ERROR = "llm-error"              # the endpoint failed after its retries
    PENDING = "pending"                  # an attempt row not judged yet (a run killed mid-judgement)


# Failures a debugger can repair; the rest (slower, quarantined, rejected-static, llm-error: the
# endpoint already failed after its retries) end the attempt.
REPAIRABLE = frozenset({Status.BUILD_FAILED, Status.INCORRECT, Status.CRASHED, Status.NO_CODE})
ACCEPTED = Status.ACCEPTED


class Outcome(StrEnum):
    """How a round ended."""

    ACCEPTED = "accepted"                # a variant was accepted: the round's kernel is the new best
    REJECTED = "rejected"                # the chosen skill was tried; nothing was accepted
    NO_CANDIDATE = "no-candidate"        # nothing applicable outside the tabu list: the run stops


class RunStatus(StrEnum):
    """A run's state in the store."""

    RUNNING = "running"
    PAUSED = "paused"                    # `--agent external` waits for `resume --candidate`
    FINISHED = "finished"
    FAILED = "failed"
    INTERRUPTED = "interrupted"          # Ctrl-C, or its process died (`resume` continues it)


class Ended(StrEnum):
    """Why a run ended, or why it has not yet (`loop.run_ended`: the reports' short word for it)."""

    ROUNDS = "rounds"                    # every round of --rounds spent
    NEAR_FLOOR = "near-floor"            # nothing of the engine's left near the roofline floor (--stop-at-floor)
    NO_CANDIDATE = "no-candidate"        # every proposed skill tried or inapplicable
    BUDGET = "budget"                    # the time or token budget spent
    WAITING = "waiting"                  # paused for a candidate (`--agent external`)
    ERROR = "error"                      # failed: an error, or an LLM endpoint that never answered
    INTERRUPTED = "interrupted"
    RUNNING = "running"


class MemberAction(StrEnum):
    """What a batch command (`bench optimize`, `resume --all`, `resume --more-rounds`) did to one run."""

    STARTED = "started"                  # the run was started
    JUDGED = "judged"                    # its waiting candidate was judged
    CONTINUED = "continued"              # it went on with no candidate to judge (e.g. a run whose process died)
    WAITING = "waiting"                  # it still waits for a candidate
    DEFERRED = "deferred"                # its job never started (the batch's time ran out): a later resume does it
    INTERRUPTED = "interrupted"          # the machine stopped its job (out of memory, a dead worker): resume again
    FAILED = "failed"                    # its job failed
    REOPENED = "reopened"                # its --rounds raised; what became of it then is its status and the reason
    LEFT_ALONE = "left-alone"            # not ended for `rounds`, not picked by --below-floor, already timed, or
                                         # timed on another GPU model than this machine's
    TIMED = "timed"                      # `kernelbench baselines` timed its PyTorch torch.compile


AGENTS = ("openai", "external", "none")
MAX_ROUNDS = 100             # the most rounds a run may be given (--rounds, --more-rounds)


@dataclass(frozen=True)
class Verdict:
    """What the judge concluded about one candidate (times in microseconds, spread relative)."""

    status: Status
    reason: str
    runtime_us: float | None = None
    baseline_us: float | None = None
    speedup: float | None = None
    spread: float | None = None
    details: str = ""           # compiler log / verifier report, for the debugger
    phases_s: dict[str, float] = field(default_factory=dict)   # where the judging's time went (harness.phases)
    # the device bytes the judging reserved and its allocators' peaks (CheckResult.memory): the estimate checked
    memory: dict[str, int | str] = field(default_factory=dict)


@dataclass(frozen=True)
class EvidenceRow:
    """One focus row behind a proposal: the value a firing rule read, and what it compared it with."""

    name: str
    observed: Any
    threshold: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "observed": self.observed, "threshold": self.threshold}


@dataclass(frozen=True)
class Candidate:
    """A skill the decision offers this round, as ranked by the engine."""

    skill: str
    score: float
    time_saved_fraction: float | None    # the rule's estimate: the fraction of runtime at stake
    rules: tuple[str, ...]               # the rules that proposed it
    because: str                         # the best rule's reason, with observed values filled in
    focus: tuple[EvidenceRow, ...] = ()
    applicable: bool = True              # can this run's agent mode apply it?
    params: dict[str, Any] = field(default_factory=dict)

    def stored(self) -> dict[str, Any]:
        """The decision row's entry (and what `explain` reads back); `params` belongs to the chosen one."""
        return {"skill": self.skill, "score": self.score, "time_saved_fraction": self.time_saved_fraction,
                "applicable": self.applicable,
                "rules": list(self.rules), "because": self.because, "focus": [row.to_json() for row in self.focus]}

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> Candidate:
        # runs stored before issue 19 called the estimate `speedup`
        share = data["time_saved_fraction"] if "time_saved_fraction" in data else data.get("speedup")
        return cls(skill=data["skill"], score=data["score"], time_saved_fraction=share, rules=tuple(data["rules"]),
                   because=data["because"], applicable=data["applicable"],
                   focus=tuple(EvidenceRow(r["name"], r["observed"], r["threshold"]) for r in data["focus"]))


@dataclass(frozen=True)
class LLMCall:
    """One call of the endpoint. The loop stores it as an `llm_calls` row, the prompt and the
    response as artifacts (the row holds their digests)."""

    role: str                            # coder | debugger
    model: str
    endpoint_name: str                   # the host only: never the key or the full URL
    prompt_version: str                  # the template, e.g. coder.v1
    prompt: str                          # the rendered prompt
    response: str | None = None          # the reply text (None when the endpoint failed)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    duration_s: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class PastTry:
    """An earlier try at the same candidate, for the debugger's repair."""

    attempt: int
    status: Status
    reason: str
    details: str                         # the tail of the compiler log / verifier report
    source: str | None                   # the failing kernel (None when the try produced none)


@dataclass(frozen=True)
class ApplyRequest:
    """What the loop asks an applier for: one try at applying a skill to the current best kernel."""

    skill: str
    params: dict[str, Any]
    attempt: int                         # 0 = the first try, 1.. = repairs
    key: str                             # the attempt's step key (`r3/v0/a1`)
    history: tuple[PastTry, ...] = ()
    candidate: Candidate | None = None   # the decision's entry for the skill: its evidence
    external_source: str | None = None   # `resume --candidate`: the kernel someone wrote for this try
    # An engine-on free choice (every proposal tried on this kernel): the engine's proposals and their evidence,
    # which the coder's prompt shows as the profile's diagnosis (`loop.diagnosis_of`); empty otherwise.
    diagnosis: tuple[Candidate, ...] = ()


@dataclass(frozen=True)
class Produced:
    """What an applier made: a kernel and its flags, or why there is none."""

    source: str | None
    flags: tuple[str, ...] = ()
    error: str | None = None
    kind: Status | None = None           # why there is no source (no-code, llm-error)
    tokens: int = 0
    llm_call: LLMCall | None = None


class Paused(Exception):
    """Raised by an applier that waits for someone else's kernel (`--agent external`).

    Nothing is written for the attempt; the loop marks the run paused and stops, and
    `skillbase resume run_N --candidate FILE` answers it.
    """

    def __init__(self, skill: str, prompt: Path):
        super().__init__(f"waiting for a candidate for {skill}")
        self.skill = skill
        self.prompt = prompt


@dataclass
class Settings:
    rounds: int = 10
    repairs: int = 3
    agent: str = "none"                 # one of AGENTS
    model: str | None = None
    time_budget_s: float | None = None
    token_budget: int | None = None
    sweep_limit: int = 24
    extra_rules: tuple[str, ...] = ()   # the user's rule folders (--extra-rules), absolute
    engine: bool = True                 # False (--no-engine, the ablation): the coder picks the optimization
    # --stop-at-floor: once the engine has no proposal left, a run whose best kernel runs at this share of its
    # roofline floor or more stops instead of asking for the coder's free choice (0: never; the floor unknown: never)
    stop_at_floor: float = 0.75

    @classmethod
    def from_stored(cls, stored: dict) -> Settings:
        """Settings as a run's manifest or a batch recorded them (JSON: keys of older versions dropped)."""
        settings = cls(**{k: v for k, v in stored.items() if k in cls.__dataclass_fields__})
        settings.extra_rules = tuple(settings.extra_rules)
        return settings

    def check(self) -> None:
        """Refuse settings that cannot run, before anything is recorded."""
        if not self.engine and self.agent == "none":
            raise InputError("--no-engine leaves the choice to a coder; mechanical skills need the engine's choice",
                             hint="use --agent external or --agent openai with --no-engine")
        if not 0.0 <= self.stop_at_floor <= 1.0:
            # named as the API keyword and the MCP tool's argument name it: the CLI's --stop-at-floor is a
            # FloatRange(0, 1), refused by click before a Settings is made
            raise InputError(f"stop_at_floor {self.stop_at_floor:g} is not a share of the roofline floor",
                             hint="give a share between 0 and 1 (0.75 stops at 75 % of the floor; 0 never stops)")


@dataclass(frozen=True)
class Tried:
    skill: str
    status: Outcome
    # What the round's last try measured, and for a free choice the change its code says it made
    # (`loop.round_note`): "slower 0.99x: 128-bit vector atomics". Empty where nothing was judged.
    note: str = ""


@dataclass
class LoopState:
    """The loop's state, always re-derived from the store's step results (never kept only in memory)."""

    best_source: str
    best_flags: tuple[str, ...] = ()
    best_us: float | None = None
    baseline_us: float | None = None
    tabu: list[list] = field(default_factory=list)          # tabu_key()s: [skill, params_json, kernel_digest]
    tried: list[Tried] = field(default_factory=list)
    tokens_used: int = 0

    @property
    def best_digest(self) -> str:
        return kernel_digest(self.best_source, self.best_flags)

    def memory(self) -> dict:
        """This run's memory, in the shape the engine's history vocabulary reads."""
        return {
            "tried": [t.skill for t in self.tried],
            "failed": [t.skill for t in self.tried if t.status != Outcome.ACCEPTED],
            "won": [t.skill for t in self.tried if t.status == Outcome.ACCEPTED],
            "tabu": [list(t) for t in self.tabu],
        }


def kernel_digest(source: str, flags: tuple[str, ...] = ()) -> str:
    return hashlib.sha256((source + "\0" + " ".join(flags)).encode()).hexdigest()


def tabu_key(skill: str, params: dict, digest: str) -> list:
    return [skill, json.dumps(params, sort_keys=True), digest]


# -- the collaborators ---------------------------------------------------------------------------

@runtime_checkable
class Judge(Protocol):
    """Builds, checks, verifies and times candidates (the harness, or compile-only without a GPU)."""

    def baseline(self, source: str) -> Verdict: ...

    def judge(self, source: str, flags: tuple[str, ...], best_source: str,
              best_flags: tuple[str, ...]) -> Verdict: ...


@runtime_checkable
class EvidenceSource(Protocol):
    """Each round's evidence about the current best kernel; `history` is this run's memory."""

    def evidence(self, source: str, flags: tuple[str, ...], history: dict) -> Evidence: ...


@runtime_checkable
class Applier(Protocol):
    """Turns the chosen skill into candidate code, in one agent mode."""

    can_repair: bool                    # may a repairable failure be handed back for another try?

    def variants(self, skill: str, params: dict, state: LoopState) -> list[dict]:
        """The parameter settings to try for the skill this round (one candidate each)."""
        ...

    def produce(self, request: ApplyRequest, state: LoopState) -> Produced:
        """The candidate for one try; raises `Paused` to wait for someone else's kernel."""
        ...


# The decision: the engine's ranking of this round's evidence as candidates, plus the full engine
# result as JSON (every rule, every leaf: what `explain` replays).
Decide = Callable[["Evidence", LoopState], tuple[list[Candidate], str]]
