"""The optimization loop: evidence -> decision -> apply one skill -> judge -> keep the best.

Every step is recorded in the run store under a key (`baseline`, `r3/evidence`, `r3/decision`,
`r3/a1/candidate`, `r3/a1/verdict`, `r3/outcome`) in the same transaction as its rows, so a run
killed at any point resumes from its last finished step: `run()` replays finished steps from the
store and computes only the missing ones. The loop's state (best kernel, tabu list, memory) is
always re-derived from those step results, never kept only in memory.

Collaborators, each replaceable:
- a `Judge` (the harness: build, static check, verify, time; or compile-only on a machine without a GPU),
- an `EvidenceSource` (profile + static features + ptxas),
- the engine (ranking with this run's memory and past runs' per-skill outcomes),
- an applier per agent mode: `none` (mechanical sweeps and compile flags), `openai` (coder and
  debugger over an OpenAI-compatible endpoint), `external` (writes the prompt and pauses the run).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from skillbase.run import mechanical
from skillbase.errors import InputError, SkillbaseError
from skillbase.run.store import RunStore

ACCEPTED = "accepted"
# Failures a debugger can repair; the rest (slower, quarantined, rejected-static, llm-error: the
# endpoint already failed after its retries) end the attempt.
REPAIRABLE = ("build-failed", "incorrect", "crashed", "no-code")


@dataclass(frozen=True)
class Verdict:
    """What the harness concluded about one candidate (times in microseconds, spread relative)."""

    status: str                 # accepted | slower | incorrect | build-failed | crashed | rejected-static | quarantined | unverified
    reason: str
    runtime_us: float | None = None
    baseline_us: float | None = None
    speedup: float | None = None
    spread: float | None = None
    details: str = ""           # compiler log / verifier report, for the debugger


class Judge(Protocol):
    def baseline(self, source: str) -> Verdict: ...
    def judge(self, source: str, flags: tuple[str, ...], best_source: str, best_flags: tuple[str, ...]) -> Verdict: ...


class EvidenceSource(Protocol):
    def evidence(self, source: str, flags: tuple[str, ...], history: dict) -> Any: ...


@dataclass
class Settings:
    rounds: int = 10
    repairs: int = 3
    agent: str = "none"                 # none | openai | external
    model: str | None = None
    time_budget_s: float | None = None
    token_budget: int | None = None
    sweep_limit: int = 24
    extra_rules: tuple[str, ...] = ()   # the user's rule folders (--extra-rules), absolute


class PausedForCandidate(SkillbaseError):
    """`--agent external`: the prompt is written; the run waits for `resume --candidate`."""

    exit_code = 0


@dataclass
class LoopState:
    best_source: str
    best_flags: tuple[str, ...] = ()
    best_us: float | None = None
    baseline_us: float | None = None
    tabu: list[list] = field(default_factory=list)          # [skill, params_json, kernel_digest]
    tried: list[dict] = field(default_factory=list)
    tokens_used: int = 0

    @property
    def best_digest(self) -> str:
        return kernel_digest(self.best_source, self.best_flags)

    def memory(self) -> dict:
        """This run's memory, in the shape the engine's history vocabulary reads."""
        return {
            "tried": [t["skill"] for t in self.tried],
            "failed": [t["skill"] for t in self.tried if t["status"] != ACCEPTED],
            "won": [t["skill"] for t in self.tried if t["status"] == ACCEPTED],
            "tabu": [list(t) for t in self.tabu],
        }


def kernel_digest(source: str, flags: tuple[str, ...] = ()) -> str:
    return hashlib.sha256((source + "\0" + " ".join(flags)).encode()).hexdigest()


def tabu_key(skill: str, params: dict, digest: str) -> list:
    return [skill, json.dumps(params, sort_keys=True), digest]


class Loop:
    """One run of the loop over a task, backed by the store."""

    def __init__(self, store: RunStore, run_id: int, task_source: Path, launcher: str, settings: Settings,
                 judge: Judge, evidence_source: EvidenceSource,
                 decide: Callable[[Any, LoopState], tuple[list[dict], str | None]],
                 appliers: dict[str, Any], progress: Callable[[str], None] = lambda message: None,
                 external_dir: Path | None = None):
        self.store = store
        self.run_id = run_id
        self.task_source = task_source
        self.launcher = launcher
        self.settings = settings
        self.judge = judge
        self.evidence_source = evidence_source
        self.decide = decide
        self.appliers = appliers
        self.progress = progress
        self.external_dir = external_dir
        self.started = time.monotonic()

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
        source = self.task_source.read_text()
        state = LoopState(best_source=source)
        baseline = self._step("baseline", lambda: self._baseline(source))
        state.baseline_us = baseline["runtime_us"]
        state.best_us = baseline["runtime_us"]
        self.store.update_run(self.run_id, status="running", baseline_us=state.baseline_us,
                              best_us=state.best_us, best_kernel=self.store.artifacts.put_text(source))
        stop_reason = f"ran {self.settings.rounds} rounds"
        for round_idx in range(self.settings.rounds):
            budget = self._budget_exhausted(state)
            if budget:
                stop_reason = budget
                break
            outcome = self._round(round_idx, state, external_candidate)
            external_candidate = None
            if outcome == "no-candidate":
                stop_reason = "no candidate left (every proposed skill was tried or cannot be applied in this mode)"
                break
        self.store.update_run(self.run_id, status="finished", stop_reason=stop_reason, finished_at=time.time(),
                              best_us=state.best_us,
                              best_kernel=self.store.artifacts.put_text(state.best_source))
        self.progress(f"stopped: {stop_reason}")
        return state

    def _budget_exhausted(self, state: LoopState) -> str | None:
        if self.settings.time_budget_s is not None and time.monotonic() - self.started > self.settings.time_budget_s:
            return f"time budget of {self.settings.time_budget_s:.0f} s spent"
        if self.settings.token_budget is not None and state.tokens_used >= self.settings.token_budget:
            return f"token budget of {self.settings.token_budget} spent"
        return None

    def _baseline(self, source: str) -> tuple[dict, Callable]:
        self.progress("timing the baseline")
        verdict = self.judge.baseline(source)
        if verdict.runtime_us is None and verdict.status not in ("unverified",):
            raise InputError(f"the baseline kernel failed the harness: {verdict.reason}",
                             hint="fix the kernel or its spec first (`skillbase check`)")
        return asdict(verdict), None

    def _round(self, idx: int, state: LoopState, external_candidate: str | None) -> str:
        prefix = f"r{idx}"
        start_digest = state.best_digest

        def evidence_step():
            self.progress(f"round {idx}: collecting evidence")
            evidence = self.evidence_source.evidence(state.best_source, state.best_flags, state.memory())
            document = evidence.to_json() if hasattr(evidence, "to_json") else json.dumps(evidence)
            digest = self.store.artifacts.put_text(document if isinstance(document, str) else json.dumps(document))

            def rows(tx):
                tx.start_round(self.run_id, idx, start_digest)
                tx.add_evidence(self.run_id, idx, start_digest, digest, None)
            return {"document": digest}, rows

        evidence_result = self._step(f"{prefix}/evidence", evidence_step)

        def decision_step():
            evidence = self._load_evidence(evidence_result["document"])
            candidates, trace_text = self.decide(evidence, state)
            chosen = next((c for c in candidates if c.get("applicable", True)
                           and tabu_key(c["skill"], c.get("params", {}), start_digest) not in state.tabu), None)
            # The full engine result (every rule, every leaf) is what `explain` replays.
            trace = self.store.artifacts.put_text(trace_text or json.dumps(candidates, sort_keys=True, default=str))
            reason = (f"{chosen['skill']}: {chosen.get('because') or 'top applicable candidate'}" if chosen
                      else "no applicable candidate outside the tabu list")
            result = {"skill": chosen["skill"] if chosen else None, "params": chosen.get("params", {}) if chosen else {},
                      "candidates": [{k: c.get(k) for k in ("skill", "score", "speedup", "applicable", "rules", "because",
                                                            "focus")}
                                     for c in candidates], "reason": reason}

            def rows(tx):
                tx.add_decision(self.run_id, idx, result["skill"], result["params"], result["candidates"], trace, reason)
            self.progress(f"round {idx}: {reason}")
            return result, rows

        decision = self._step(f"{prefix}/decision", decision_step)
        if decision["skill"] is None:
            self._step(f"{prefix}/outcome", lambda: ({"status": "no-candidate"},
                                                      lambda tx: tx.finish_round(self.run_id, idx, "no-candidate")))
            return "no-candidate"

        skill, params = decision["skill"], decision["params"]
        applier = self.appliers[self.settings.agent]
        variants = applier.variants(skill, params, state) if hasattr(applier, "variants") else [params]
        best: dict | None = None
        for variant_idx, variant in enumerate(variants):
            verdict = self._attempts(prefix, idx, variant_idx, skill, variant, state, applier, external_candidate,
                                     decision)
            external_candidate = None
            if verdict["status"] == ACCEPTED and (best is None or verdict["runtime_us"] < best["runtime_us"]):
                best = verdict
        outcome = self._step(f"{prefix}/outcome", lambda: self._outcome(idx, skill, params, start_digest, best))
        self._apply_outcome(outcome, state)
        return outcome["status"]

    def _attempts(self, prefix, idx, variant_idx, skill, params, state, applier, external_candidate,
                  decision) -> dict:
        """One candidate and up to `repairs` repairs of it; returns the last verdict (as a dict)."""
        history: list[dict] = []
        verdict: dict = {}
        for attempt in range(self.settings.repairs + 1):
            key = f"{prefix}/v{variant_idx}/a{attempt}"

            def candidate_step():
                produced = applier.produce(skill=skill, params=params, state=state, attempt=attempt,
                                           history=history, run_id=self.run_id, key=key,
                                           external_candidate=external_candidate, decision=decision)
                digest = self.store.artifacts.put_text(produced["source"]) if produced.get("source") else None
                result = {"source": digest, "flags": list(produced.get("flags", ())), "error": produced.get("error"),
                          "kind": produced.get("kind"),
                          "tokens": produced.get("tokens", 0), "llm_call": produced.get("llm_call")}

                def rows(tx):
                    attempt_id = tx.add_attempt(self.run_id, idx, attempt, skill, params,
                                                state.best_digest, digest)
                    result["attempt_id"] = attempt_id
                    call = produced.get("llm_call")
                    if call:
                        tx.add_llm_call(self.run_id, attempt_id, **call)
                return result, rows

            candidate = self._step(f"{key}/candidate", candidate_step)
            state.tokens_used += candidate.get("tokens", 0)

            def verdict_step():
                if candidate["source"] is None:
                    result = asdict(Verdict(status=candidate.get("kind") or "no-code",
                                            reason=candidate["error"] or "no candidate produced"))
                else:
                    source = self.store.artifacts.get_text(candidate["source"])
                    self.progress(f"round {idx}: judging {skill} {json.dumps(params) if params else ''} (try {attempt + 1})")
                    result = asdict(self.judge.judge(source, tuple(candidate["flags"]), state.best_source,
                                                     state.best_flags))

                def rows(tx):
                    tx.finish_attempt(candidate["attempt_id"], result["status"], reason=result["reason"],
                                      runtime_us=result["runtime_us"], baseline_us=result["baseline_us"],
                                      speedup=result["speedup"], spread=result["spread"])
                result["source"] = candidate["source"]
                result["flags"] = candidate["flags"]
                return result, rows

            verdict = self._step(f"{key}/verdict", verdict_step)
            self.progress(f"round {idx}: {skill} -> {verdict['status']}: {verdict['reason']}")
            history.append({"attempt": attempt, "status": verdict["status"], "reason": verdict["reason"],
                            "details": verdict.get("details", "")[-2000:], "source": verdict["source"]})
            if verdict["status"] not in REPAIRABLE or not getattr(applier, "can_repair", False):
                break
        return verdict

    def _outcome(self, idx: int, skill: str, params: dict, start_digest: str, best: dict | None):
        status = ACCEPTED if best else "rejected"
        result = {"status": status, "skill": skill, "params": params, "start_digest": start_digest,
                  "best": best}

        def rows(tx):
            tx.finish_round(self.run_id, idx, status)
        return result, rows

    def _apply_outcome(self, outcome: dict, state: LoopState) -> None:
        state.tabu.append(tabu_key(outcome["skill"], outcome["params"], outcome["start_digest"]))
        state.tried.append({"skill": outcome["skill"], "status": outcome["status"]})
        best = outcome.get("best")
        if outcome["status"] == ACCEPTED and best:
            state.best_source = self.store.artifacts.get_text(best["source"])
            state.best_flags = tuple(best.get("flags", ()))
            state.best_us = best["runtime_us"]
            self.store.update_run(self.run_id, best_us=state.best_us,
                                  best_kernel=best["source"])

    def _load_evidence(self, digest: str):
        text = self.store.artifacts.get_text(digest)
        try:
            from skillbase.evidence.model import Evidence
            return Evidence.from_json(text)
        except ImportError:
            return json.loads(text)


# -- appliers ---------------------------------------------------------------------------------

class MechanicalApplier:
    """`--agent none`: the skills whose YAML declares a mechanical application.

    `automation.mechanical` of kind `compile_flags` adds its flags; kind `parameter_sweep` sweeps the
    kernel's annotated tunables (those it names, or all for `*`), each setting an ordinary candidate.
    """

    can_repair = False

    def __init__(self, mechanical_of: Callable[[str], dict | None], sweep_limit: int = 24):
        self.mechanical_of = mechanical_of
        self.sweep_limit = sweep_limit

    def _tunables(self, skill: str, source: str) -> list:
        spec = self.mechanical_of(skill) or {}
        names = {t.get("name") for t in spec.get("tunables", [])}
        found = mechanical.find_tunables(source)
        return found if "*" in names else [t for t in found if t.name in names]

    def applicable(self, skill: str, source: str) -> bool:
        kind = (self.mechanical_of(skill) or {}).get("kind")
        if kind == "compile_flags":
            return True
        if kind == "parameter_sweep":
            return bool(self._tunables(skill, source))
        return False

    def variants(self, skill: str, params: dict, state: LoopState) -> list[dict]:
        spec = self.mechanical_of(skill) or {}
        if spec.get("kind") != "parameter_sweep":
            return [params]
        tunables = self._tunables(skill, state.best_source)
        limit = min(self.sweep_limit, spec.get("limit") or self.sweep_limit)
        return [mechanical.changed(s, tunables) for s in mechanical.sweep_grid(tunables, limit)]

    def produce(self, *, skill, params, state, **_) -> dict:
        spec = self.mechanical_of(skill) or {}
        if spec.get("kind") == "parameter_sweep":
            return {"source": mechanical.apply_values(state.best_source, params), "flags": state.best_flags}
        flags = tuple(dict.fromkeys(state.best_flags + tuple(spec.get("flags", ()))))
        return {"source": state.best_source, "flags": flags}
