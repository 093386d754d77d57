"""The optimization loop: evidence -> decision -> apply one skill -> judge -> keep the best.

Every step is recorded in the run store under a key (`baseline`, `r3/evidence`, `r3/decision`,
`r3/v0/a1/candidate`, `r3/v0/a1/verdict`, `r3/outcome`) in the same transaction as its rows, so a
run killed at any point resumes from its last finished step: `run()` replays finished steps from
the store and computes only the missing ones. The loop's state (best kernel, tabu list, memory) is
always re-derived from those step results, never kept only in memory.

Collaborators (`skillbase.run.types`), each replaceable:
- a `Judge` (the harness: build, static check, verify, time; or compile-only on a machine without a GPU),
- an `EvidenceSource` (profile + static features + ptxas, with this run's memory as history),
- the decision (the engine's ranking of the evidence as `Candidate`s),
- the `Applier` of the run's agent mode: `none` (mechanical sweeps and compile flags), `openai`
  (coder and debugger over an OpenAI-compatible endpoint), `external` (writes the prompt and
  raises `Paused`; the loop then marks the run paused and stops).
"""

from __future__ import annotations

import difflib
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path

from skillbase.agents.coder import FREE_CHOICE
from skillbase.errors import InputError
from skillbase.evidence import Evidence
from skillbase.run.store import RunRow, RunStore, run_name
from skillbase.run.types import (
    REPAIRABLE,
    Applier,
    ApplyRequest,
    Candidate,
    Decide,
    Ended,
    EvidenceSource,
    Judge,
    LLMCall,
    LoopState,
    Outcome,
    PastTry,
    Paused,
    RunStatus,
    Settings,
    Status,
    Tried,
    Verdict,
    tabu_key,
)

NO_CANDIDATE_LEFT = "no candidate left (every proposed skill was tried or cannot be applied in this mode)"


class Loop:
    """One run of the loop over a task, backed by the store."""

    def __init__(self, store: RunStore, run_id: int, task_source: Path, settings: Settings, judge: Judge,
                 evidence_source: EvidenceSource, decide: Decide, applier: Applier,
                 progress: Callable[[str], None] = lambda message: None):
        self.store = store
        self.run_id = run_id
        self.task_source = task_source
        self.settings = settings
        self.judge = judge
        self.evidence_source = evidence_source
        self.decide = decide
        self.applier = applier
        self.progress = progress
        self.started = time.monotonic()
        self.external_source: str | None = None   # `resume --candidate`: handed to the first try produced

    # -- step memoisation ---------------------------------------------------------------------

    def _step(self, key: str, compute: Callable[[], tuple[dict, Callable | None]]) -> dict:
        """Return a finished step's result, or compute it and record it (with its rows) atomically."""
        done = self.store.step_result(self.run_id, key)
        if done is not None:
            return done
        result, write_rows = compute()
        with self.store.transaction() as tx:
            if write_rows is not None:
                write_rows(tx)
            tx.finish_step(self.run_id, key, result)
        return result

    # -- the loop -----------------------------------------------------------------------------

    def run(self, external_candidate: str | None = None) -> LoopState:
        """Run (or resume) the loop until it finishes, runs out of budget or an applier pauses it."""
        self.external_source = external_candidate
        source = self.task_source.read_text()
        state = LoopState(best_source=source)
        baseline = self._step("baseline", lambda: self._baseline(source))
        state.baseline_us = baseline["runtime_us"]
        state.best_us = baseline["runtime_us"]
        self.store.update_run(self.run_id, status=RunStatus.RUNNING, baseline_us=state.baseline_us,
                              best_us=state.best_us, best_kernel=self.store.artifacts.put_text(source))
        stop_reason = f"ran {self.settings.rounds} rounds"
        try:
            for round_idx in range(self.settings.rounds):
                budget = self._budget_exhausted(state)
                if budget:
                    stop_reason = budget
                    break
                if self._round(round_idx, state) == Outcome.NO_CANDIDATE:
                    # the decision says why when the coder's free choice was held back (the kernel near its floor)
                    stop_reason = self.store.step_result(self.run_id, f"r{round_idx}/decision").get("stop") \
                        or NO_CANDIDATE_LEFT
                    break
        except Paused as pause:
            self._pause(pause)
            return state
        outside = self._failed_for_an_outside_reason()
        if outside:
            self.store.update_run(self.run_id, status=RunStatus.FAILED, stop_reason=outside, finished_at=time.time())
            self.progress(f"failed: {outside}")
            return state
        self.store.update_run(self.run_id, status=RunStatus.FINISHED, stop_reason=stop_reason,
                              finished_at=time.time(), best_us=state.best_us,
                              best_kernel=self.store.artifacts.put_text(state.best_source))
        self.progress(f"stopped: {stop_reason}")
        return state

    def _failed_for_an_outside_reason(self) -> str | None:
        """Why the run failed when every attempt failed for a reason outside the kernel (the LLM
        endpoint never answered): such a run tried nothing, and `finished` would say it had."""
        attempts = self.store.attempts(self.run_id)
        if not attempts or any(a["status"] != Status.LLM_ERROR for a in attempts):
            return None
        return f"all {len(attempts)} attempts failed: the LLM endpoint did not answer ({attempts[-1]['reason']})"

    def _pause(self, pause: Paused) -> None:
        """An applier waits for someone else's kernel: the run is paused; `resume --candidate` answers it."""
        name = run_name(self.run_id)
        self.store.update_run(self.run_id, status=RunStatus.PAUSED, stop_reason=str(pause))
        self.progress(f"{name} is waiting for a candidate applying {pause.skill}; the prompt is in {pause.prompt}")
        self.progress(f"hint: write the new kernel to a file, then: skillbase resume {name} --candidate FILE")

    def _budget_exhausted(self, state: LoopState) -> str | None:
        if self.settings.time_budget_s is not None and time.monotonic() - self.started > self.settings.time_budget_s:
            return f"time budget of {self.settings.time_budget_s:.0f} s spent"
        if self.settings.token_budget is not None and state.tokens_used >= self.settings.token_budget:
            return f"token budget of {self.settings.token_budget} spent"
        return None

    def _baseline(self, source: str) -> tuple[dict, None]:
        self.progress("timing the baseline")
        verdict = self.judge.baseline(source)
        if verdict.runtime_us is None and verdict.status != Status.UNVERIFIED:
            raise InputError(f"the baseline kernel failed the harness: {verdict.reason}",
                             hint="fix the kernel or its spec first (`skillbase check`)")
        return asdict(verdict), None

    def _round(self, idx: int, state: LoopState) -> Outcome:
        prefix = f"r{idx}"
        start_digest = state.best_digest

        def evidence_step():
            self.progress(f"round {idx}: collecting evidence")
            evidence = self.evidence_source.evidence(state.best_source, state.best_flags, state.memory())
            digest = self.store.artifacts.put_text(evidence.to_json())

            return {"document": digest}, partial(record_evidence, run_id=self.run_id, idx=idx, kernel=start_digest,
                                                 document=digest)

        evidence_result = self._step(f"{prefix}/evidence", evidence_step)

        def decision_step():
            evidence = Evidence.from_json(self.store.artifacts.get_text(evidence_result["document"]))
            result, trace_text = decision_of(*self.decide(evidence, state), state.tabu, start_digest)
            trace = self.store.artifacts.put_text(trace_text)

            def rows(tx):
                tx.add_decision(self.run_id, idx, result["skill"], result["params"], result["candidates"], trace,
                                result["reason"])
            self.progress(f"round {idx}: {result['reason']}")
            return result, rows

        decision = self._step(f"{prefix}/decision", decision_step)
        if decision["skill"] is None:
            def finish(tx):
                tx.finish_round(self.run_id, idx, Outcome.NO_CANDIDATE)
            self._step(f"{prefix}/outcome", lambda: ({"status": Outcome.NO_CANDIDATE}, finish))
            return Outcome.NO_CANDIDATE

        skill, params = decision["skill"], decision["params"]
        candidate = next((Candidate.from_stored(c) for c in decision["candidates"] if c["skill"] == skill), None)
        diagnosis = diagnosis_of(decision["candidates"], skill)
        best: dict | None = None
        last: dict = {}
        for variant_idx, variant in enumerate(self.applier.variants(skill, params, state)):
            verdict = self._attempts(prefix, idx, variant_idx, skill, variant, state, candidate, diagnosis)
            last = verdict
            if verdict["status"] == Status.ACCEPTED and (best is None or verdict["runtime_us"] < best["runtime_us"]):
                best = verdict
        outcome = self._step(f"{prefix}/outcome", lambda: self._outcome(idx, skill, params, start_digest, best))
        self._apply_outcome(outcome, state, last)
        return Outcome(outcome["status"])

    def _attempts(self, prefix: str, idx: int, variant_idx: int, skill: str, params: dict, state: LoopState,
                  candidate: Candidate | None, diagnosis: tuple[Candidate, ...] = ()) -> dict:
        """One candidate and up to `repairs` repairs of it; returns the last verdict step's result."""
        history: list[PastTry] = []
        verdict: dict = {}
        for attempt in range(self.settings.repairs + 1):
            key = attempt_key(idx, variant_idx, attempt)
            request = ApplyRequest(skill=skill, params=params, attempt=attempt, key=key, history=tuple(history),
                                   candidate=candidate, diagnosis=diagnosis)
            produced = self._step(f"{key}/candidate", partial(self._produce, idx, request, state))
            state.tokens_used += produced.get("tokens", 0)
            verdict = self._step(f"{key}/verdict", partial(self._judge, idx, request, produced, state))
            self.progress(f"round {idx}: {skill} -> {verdict['status']}: {verdict['reason']}")
            if verdict["status"] not in REPAIRABLE or not self.applier.can_repair:
                break
            failing = self.store.artifacts.get_text(verdict["source"]) if verdict["source"] else None
            history.append(PastTry(attempt=attempt, status=Status(verdict["status"]), reason=verdict["reason"],
                                   details=verdict.get("details", "")[-2000:], source=failing))
        return verdict

    def _produce(self, idx: int, request: ApplyRequest, state: LoopState) -> tuple[dict, Callable]:
        # A `--candidate` answers the try that paused: the first one actually produced (the tries
        # before it replay from the store).
        request = replace(request, external_source=self.external_source)
        self.external_source = None
        produced = self.applier.produce(request, state)
        digest = self.store.artifacts.put_text(produced.source) if produced.source else None
        call = self._stored_call(produced.llm_call) if produced.llm_call else None
        result = {"source": digest, "flags": list(produced.flags), "error": produced.error,
                  "kind": produced.kind, "tokens": produced.tokens, "llm_call": call}

        def rows(tx):
            attempt_id = tx.add_attempt(self.run_id, idx, request.attempt, request.skill, request.params,
                                        state.best_digest, digest)
            result["attempt_id"] = attempt_id
            if call:
                tx.add_llm_call(self.run_id, attempt_id, **call)
        return result, rows

    def _judge(self, idx: int, request: ApplyRequest, produced: dict, state: LoopState) -> tuple[dict, Callable]:
        if produced["source"] is None:
            result = asdict(Verdict(status=Status(produced.get("kind") or Status.NO_CODE),
                                    reason=produced["error"] or "no candidate produced"))
        else:
            source = self.store.artifacts.get_text(produced["source"])
            params = json.dumps(request.params) if request.params else ""
            self.progress(f"round {idx}: judging {request.skill} {params} (try {request.attempt + 1})")
            result = asdict(self.judge.judge(source, tuple(produced["flags"]), state.best_source, state.best_flags))

        def rows(tx):
            tx.finish_attempt(produced["attempt_id"], result["status"], reason=result["reason"],
                              runtime_us=result["runtime_us"], baseline_us=result["baseline_us"],
                              speedup=result["speedup"], spread=result["spread"], phases=result["phases_s"])
        result["source"] = produced["source"]
        result["flags"] = produced["flags"]
        return result, rows

    def _stored_call(self, call: LLMCall) -> dict:
        """The `llm_calls` row of a call: its prompt and response become artifacts, named by digest."""
        response = self.store.artifacts.put_text(call.response) if call.response is not None else None
        return asdict(call) | {"prompt": self.store.artifacts.put_text(call.prompt), "response": response}

    def _outcome(self, idx: int, skill: str, params: dict, start_digest: str, best: dict | None):
        status = Outcome.ACCEPTED if best else Outcome.REJECTED
        result = {"status": status, "skill": skill, "params": params, "start_digest": start_digest,
                  "best": best}

        def rows(tx):
            tx.finish_round(self.run_id, idx, status)
        return result, rows

    def _apply_outcome(self, outcome: dict, state: LoopState, last: dict | None = None) -> None:
        advance(state, outcome, self.store.artifacts.get_text, last)
        best = outcome.get("best")
        if outcome["status"] == Outcome.ACCEPTED and best:
            self.store.update_run(self.run_id, best_us=state.best_us, best_kernel=best["source"])


def run_ended(store: RunStore, run: RunRow) -> tuple[Ended, str | None]:
    """Why `run` ended (or has not) and the reason the store recorded, read from what `Loop.run` (or
    `redecide`, which ends a round as it does) left: the run's shown status, its last round's outcome and
    decision, and the rounds it finished against its --rounds."""
    status = store.shown_status(run)
    if status != RunStatus.FINISHED:
        return {RunStatus.PAUSED: Ended.WAITING, RunStatus.FAILED: Ended.ERROR,
                RunStatus.INTERRUPTED: Ended.INTERRUPTED, RunStatus.RUNNING: Ended.RUNNING}[status], run.stop_reason
    rounds = store.rounds(run.id)
    if rounds and rounds[-1]["outcome"] == Outcome.NO_CANDIDATE:
        # the decision's `stop` says the coder's free choice was held back near the floor (decision_of)
        decision = store.step_result(run.id, f"r{rounds[-1]['idx']}/decision") or {}
        return (Ended.NEAR_FLOOR if decision.get("stop") else Ended.NO_CANDIDATE), run.stop_reason
    # short of its rounds with a candidate every round: only a budget leaves the loop early
    planned = Settings.from_stored(run.manifest.get("settings") or {}).rounds
    finished = sum(r["status"] == "finished" for r in rounds)
    return (Ended.ROUNDS if finished >= planned else Ended.BUDGET), run.stop_reason


def record_evidence(tx, run_id: int, idx: int, kernel: str, document: str) -> None:
    """The rows of round `idx`'s evidence step: the round started from `kernel` (a digest), its evidence
    `document` (an artifact); `reopen` records a first new round's reused evidence with the same rows."""
    tx.start_round(run_id, idx, kernel)
    tx.add_evidence(run_id, idx, kernel, document, None)


def attempt_key(round_idx: int, variant_idx: int, attempt: int) -> str:
    """The step key of one try (`r3/v0/a1`): its candidate and verdict steps, and its prompt's name."""
    return f"r{round_idx}/v{variant_idx}/a{attempt}"


def decision_of(candidates: list[Candidate], trace_text: str, tabu: list[list],
                kernel_digest: str) -> tuple[dict, str]:
    """A round's decision as the loop records it (its step result: the chosen skill and params, the
    ranked candidates, why; `stop`: why the run stops here when the coder's free choice was not offered)
    and the trace kept beside it: the full engine result (every rule, every leaf), what `explain` replays."""
    chosen = choose(candidates, tabu, kernel_digest)
    trace = trace_text or json.dumps([c.stored() | {"params": c.params} for c in candidates], sort_keys=True,
                                     default=str)
    held_back = None if chosen else next((c for c in candidates if c.skill == FREE_CHOICE and not c.applicable), None)
    reason = (f"{chosen.skill}: {chosen.because or 'top applicable candidate'}" if chosen
              else held_back.because if held_back else "no applicable candidate outside the tabu list")
    return {"skill": chosen.skill if chosen else None, "params": chosen.params if chosen else {},
            "candidates": [c.stored() for c in candidates], "reason": reason,
            "stop": held_back.because if held_back else None}, trace


def diagnosis_of(candidates: list[dict], skill: str | None) -> tuple[Candidate, ...]:
    """For the coder's free choice in an engine-on run: the engine's proposals this decision ranked (stored form),
    those its agent can apply, in its order. The free choice is taken only when each of them was already tried on
    this kernel, but their evidence is still the profile's diagnosis, which the coder's prompt shows. Empty for a
    skill the engine chose, and with the engine off (the ablation: its decision holds the free choice alone)."""
    if skill != FREE_CHOICE:
        return ()
    return tuple(Candidate.from_stored(c) for c in candidates if c["skill"] != FREE_CHOICE and c["applicable"])


def advance(state: LoopState, outcome: dict, read_text: Callable[[str], str], last: dict | None = None) -> None:
    """A finished round's outcome step applied to the loop's state: the tabu list, what was tried (with
    `round_note`'s note of its accepted verdict, else `last`, the round's last verdict), the best kernel
    (`read_text` reads an artifact)."""
    note = round_note(outcome["skill"], outcome.get("best") or last or {}, state.best_source, read_text)
    state.tabu.append(tabu_key(outcome["skill"], outcome["params"], outcome["start_digest"]))
    state.tried.append(Tried(skill=outcome["skill"], status=Outcome(outcome["status"]), note=note))
    best = outcome.get("best")
    if outcome["status"] == Outcome.ACCEPTED and best:
        state.best_source = read_text(best["source"])
        state.best_flags = tuple(best.get("flags", ()))
        state.best_us = best["runtime_us"]


def replayed_state(store: RunStore, run_id: int, task_source: str, round_idx: int) -> LoopState | None:
    """The loop's state as round `round_idx` starts, re-derived from the finished steps before it as
    `Loop.run` replays them, reading only (None when a step it needs was never recorded)."""
    baseline = store.step_result(run_id, "baseline")
    if baseline is None:
        return None
    state = LoopState(best_source=task_source, baseline_us=baseline["runtime_us"], best_us=baseline["runtime_us"])
    for idx in range(round_idx):
        outcome = store.step_result(run_id, f"r{idx}/outcome")
        if outcome is None:
            return None
        last: dict = {}
        for variant_idx in itertools.count():   # the tokens of every try, as the loop adds them up
            tries = (store.step_result(run_id, f"{attempt_key(idx, variant_idx, attempt)}/candidate")
                     for attempt in itertools.count())
            produced = list(itertools.takewhile(lambda step: step is not None, tries))
            if not produced:
                break
            state.tokens_used += sum(step.get("tokens", 0) for step in produced)
            last = store.step_result(run_id, f"{attempt_key(idx, variant_idx, len(produced) - 1)}/verdict") or last
        advance(state, outcome, store.artifacts.get_text, last)
    return state


NOTE_CHARS = 160   # a note's description of a free choice: one line of the prompt's memory


def round_note(skill: str | None, verdict: dict, start_source: str, read_text: Callable[[str], str]) -> str:
    """What a finished round measured, for the next prompts' memory: its accepted or last verdict's status and
    speedup over the kernel it started from ("slower 0.99x"), and for a free choice the change the candidate's own
    comments describe (their first line that the kernel it started from does not have): without it the coder sees
    "free-choice: rejected" four times and proposes the same change again (session 25: spmm_csc's vector atomics)."""
    if not verdict or not verdict.get("status"):
        return ""
    speedup = f"{verdict['speedup']:.2f}x" if verdict.get("speedup") else ""
    # accepted: the round's status says so already; else which failure (slower, incorrect, build-failed ...)
    status = "" if verdict["status"] == Status.ACCEPTED else str(verdict["status"])
    note = " ".join(filter(None, (status, speedup)))
    if skill == FREE_CHOICE and verdict.get("source"):
        try:
            said = _new_comment(read_text(verdict["source"]), start_source)
        except InputError:   # a missing or corrupt artifact: the note goes without it, the run does not stop
            said = ""
        if said:
            note += f": {said}"
    return note


def _new_comment(source: str, start_source: str) -> str:
    """The first `//` comment line of `source`'s opening lines that `start_source` has no close likeness of (a
    title line the coder reworded is not a description of the change), shortened."""
    def comments(text: str) -> list[str]:
        return [" ".join(line.strip().lstrip("/").split()) for line in text.splitlines()[:60]
                if line.strip().startswith("//")]

    before = comments(start_source)
    for text in comments(source):
        if len(text) > 8 and not any(difflib.SequenceMatcher(None, text, old).ratio() > 0.75 for old in before):
            return text if len(text) <= NOTE_CHARS else text[:NOTE_CHARS - 1].rstrip() + "…"
    return ""


def choose(candidates: list[Candidate], tabu: list[list], kernel_digest: str) -> Candidate | None:
    """The round's skill: the first candidate this agent mode can apply that is not tabu on this kernel."""
    return next((c for c in candidates if c.applicable and tabu_key(c.skill, c.params, kernel_digest) not in tabu),
                None)
