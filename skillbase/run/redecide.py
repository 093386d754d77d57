"""`skillbase redecide`: a paused run's waiting round decided again with the engine's current rules and corpus.

A batch run pauses at each round's prompt, and between two trips to the GPU machine the rules or the
skills may change (a rule fixed from what the last round measured). The round's decision is a pure
function of its stored evidence (the `rN/evidence` step), the run's history (the tabu list, what was
tried: `loop.replayed_state`) and the rules, so it can be made again here, without a GPU, ncu or nvcc:
the same Decide the run's session wires (`session.make_decide`), the same `loop.decision_of` and
`choose` on the run's tabu list, the same prompt builder. The stored evidence's static source features
are recomputed from the round's kernel by today's analyser (`run.evidence.with_todays_static`: a fix to the
analysis reaches stored rounds; measurements and ptxas as stored); when the decision changes, that document
becomes the round's evidence in the same transaction (a new evidence row, the `rN/evidence` step).

Only a paused run whose round has a decision and no attempt judged yet (its first prompt waits; no
candidate was read) is re-decided; anything else is reported with a one-line reason and left alone,
as is a run with the engine off (the coder chooses there). When the skill and parameters come out the
same, nothing is written. Otherwise, in one store transaction (`_Tx.supersede_decision`): a new
decisions row, the `rN/decision` step replaced, a `decision-superseded` event marking the old row (kept:
`explain` shows it) with the rules and corpus that decided. Then the files, each a rename: a
candidate already at the expected path, which answers the old prompt, moved to `<candidates>/superseded/`
with a note; the old prompt renamed `rN-v0-a0.superseded-dID.prompt.md`; the new prompt (written
before the transaction under a staging name) put where `pending` lists it; `waiting.json` last. A run
interrupted between the transaction and the last rename is finished by the next `redecide`, as is one
whose moves failed (a file error is one line, after the commit). The superseded record keeps the staged
prompt's digest: a prompt staged by a redecide killed before its commit does not match and is deleted,
never put in place.

The same Decide holds the run's standing against its --stop-at-floor: a round whose new decision is no
candidate because the kernel is near its floor (the decision's `stop`) ends as the loop ends it, in the
same transaction (the round's outcome `no-candidate`); the stale candidate and the old prompt go aside as
above, no new prompt is written, and the run is marked finished with the stop as its reason (a run
interrupted before that is ended by the next `redecide` or `resume`). Any other round left no candidate
is refused: it keeps its skill.

A run that ended `no-candidate` (`loop.run_ended`: its last round's rules, of that day, proposed nothing
outside its tabu list) is re-decided the same way at that last round, from the evidence the round
recorded. When today's rules propose a skill, the same transaction reopens the run at that round
(`_Tx.reopen_round`: the round's outcome dropped, a `round-reopened` event saying which rules found
nothing and which found the skill); its --rounds stay, the round becomes a real one. An `--agent
external` run is then paused at the round's new prompt (staged, and its `waiting.json` written, before
the commit: a finished run's `waiting.json` is read by nothing; the prompt put in place after it, as
above); any other run is left `interrupted`, for `resume` to go on (on its GPU). Still no candidate:
nothing is written. A run that ended otherwise (its rounds spent, near its floor, a budget) is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillbase import __version__
from skillbase.agents.appliers import ExternalApplier, write_waiting
from skillbase.corpus.load import load_corpus
from skillbase.corpus.model import Corpus
from skillbase.documents import versioned
from skillbase.engine import Engine
from skillbase.errors import EnvironmentProblem, InputError
from skillbase.evidence import Evidence
from skillbase.harness import env
from skillbase.run.evidence import STATIC_REFRESH, static_refresh_line, with_todays_static
from skillbase.run.loop import attempt_key, decision_of, diagnosis_of, replayed_state, run_ended
from skillbase.run.pending import GENERATOR, PendingPrompt, pending_in, run_folder
from skillbase.run.session import make_decide, mechanical_applier, prompt_builder, recorded_standing, unchanged_task
from skillbase.run.store import RunRow, RunStore, parse_batch_ref
from skillbase.run.types import ApplyRequest, Candidate, Ended, LoopState, Outcome, Paused, RunStatus, Settings
from skillbase.task import load_task

CHANGED = "changed"          # the round's decision is the new one; prompt and candidate moved
WOULD_CHANGE = "would-change"  # --dry-run: what `changed` would do; nothing written
UNCHANGED = "unchanged"      # the same skill and parameters: nothing written
REFUSED = "refused"          # neither waiting at a round's first prompt nor ended no-candidate (the reason says why)
ACTIONS = (CHANGED, WOULD_CHANGE, UNCHANGED, REFUSED)   # the redecide document's `action`

STAGED = ".redecided"        # the new prompt's name until the store says it is the round's (after the commit)


@dataclass(frozen=True)
class RunRedecision:
    """What `redecide` did (or, with --dry-run, would do) to one run."""

    run: str
    action: str                          # changed | would-change | unchanged | refused
    reason: str                          # one line: why refused, or the new decision's reason
    round: int | None = None
    old_skill: str | None = None
    new_skill: str | None = None
    old_params: dict[str, Any] | None = None
    new_params: dict[str, Any] | None = None
    prompt: str | None = None            # the prompt `pending` lists now (changed) or would (would-change)
    superseded_prompt: str | None = None  # where the old prompt went
    candidate_moved: str | None = None   # where a candidate answering the old prompt went
    rules: dict[str, Any] = field(default_factory=dict)   # the engine and corpus that decided
    reopened: str | None = None          # a run that ended no-candidate, reopened (or, dry, to be): how it goes on
    static: str | None = None            # the static features decided on, when not the round's own (with_todays_static)

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "action": self.action, "reason": self.reason, "round": self.round,
                "old_skill": self.old_skill, "new_skill": self.new_skill, "old_params": self.old_params,
                "new_params": self.new_params, "prompt": self.prompt, "superseded_prompt": self.superseded_prompt,
                "candidate_moved": self.candidate_moved, "rules": self.rules, "reopened": self.reopened,
                "static": self.static}

    def lines(self) -> list[str]:
        if self.action == REFUSED:
            return [f"{self.run}: left alone: {self.reason}"]
        head = f"{self.run} round {self.round}: "
        static = [f"  static features: {self.static}"] if self.static else []
        if self.action == UNCHANGED:
            return [head + "unchanged (" + (_named(self.new_skill, self.new_params) if self.new_skill
                                            else "no candidate") + ")"] + static
        shown = [head + f"{_named(self.old_skill, self.old_params)} -> {_named(self.new_skill, self.new_params)}"
                 + (" (dry run: nothing written)" if self.action == WOULD_CHANGE else ""),
                 f"  why: {self.reason}", *static]
        if self.reopened:
            shown.append(f"  {'would reopen' if self.action == WOULD_CHANGE else 'reopened'}: {self.reopened}")
        if self.action == CHANGED and self.reopened:
            if self.prompt:
                shown.append(f"  prompt: {self.prompt}")
        elif self.action == CHANGED and self.new_skill is None:
            shown.append(f"  the run finished; nothing waits (the old prompt kept as {self.superseded_prompt})")
        elif self.action == CHANGED:
            shown.append(f"  prompt: {self.prompt} (the old one kept as {self.superseded_prompt})")
            if self.candidate_moved:
                shown.append(f"  a candidate for the old prompt was moved to {self.candidate_moved}")
        return shown


@dataclass(frozen=True)
class RedecideOutcome:
    """Every run `redecide` looked at (`skillbase redecide --json`)."""

    store: Path
    dry_run: bool
    runs: list[RunRedecision]

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for entry in self.runs:
            found[entry.action] = found.get(entry.action, 0) + 1
        return found

    def to_json(self) -> dict[str, Any]:
        return versioned("redecide", {"store": str(self.store), "dry_run": self.dry_run, "counts": self.counts(),
                                      "runs": [entry.to_json() for entry in self.runs]})

    def lines(self) -> list[str]:
        shown = [line for entry in self.runs for line in entry.lines()]
        counts = ", ".join(f"{n} {action}" for action, n in sorted(self.counts().items()))
        return shown + [counts or "no paused or no-candidate run to re-decide"]


def redecide(store_path=None, runs: Sequence[str | int] = (), batch: str | int | None = None, dry_run: bool = False,
             progress: Callable[[int, int, str], None] | None = None) -> RedecideOutcome:
    """Decide the waiting round of each run in `runs` (none: every paused run of the store, or of `batch`,
    and every run that ended no-candidate: its last round) again with the current rules and corpus;
    `dry_run` writes nothing (the store is opened read-only). `progress(done, total, line)` after each run."""
    store = RunStore.open(store_path, read_only=dry_run)
    try:
        if runs:
            rows = [store.get_run(ref) for ref in runs]
        else:
            wanted = parse_batch_ref(batch) if batch is not None else None
            if wanted is not None:
                store.get_batch(wanted)    # an unknown batch is an error, not an empty answer
            members = {m.run_id for m in store.batch_members(wanted)}
            rows = sorted((r for r in store.list_runs() if (wanted is None or r.id in members)
                           and (r.status == RunStatus.PAUSED or run_ended(store, r)[0] == Ended.NO_CANDIDATE)),
                          key=lambda r: r.id)
        deciders = _Deciders()
        done = []
        for row in rows:
            done.append(_redecide_run(store, row, deciders, dry_run))
            if progress is not None:
                progress(len(done), len(rows), f"{row.name}: {done[-1].action}")
        return RedecideOutcome(store.location, dry_run, done)
    finally:
        store.close()


class _Deciders:
    """The current corpus, and one engine per set of the runs' own rule folders, loaded once."""

    def __init__(self):
        self._corpus: Corpus | None = None
        self._engines: dict[tuple[str, ...], Engine] = {}

    @property
    def corpus(self) -> Corpus:
        if self._corpus is None:
            self._corpus = load_corpus()
        return self._corpus

    def engine(self, extra_rules: tuple[str, ...]) -> Engine:
        if extra_rules not in self._engines:
            self._engines[extra_rules] = Engine.load(extra_rules=extra_rules)
        return self._engines[extra_rules]

    def record(self, engine: Engine) -> dict[str, Any]:
        """Which rules and corpus decided (the digests a run's manifest records)."""
        return {"skillbase_version": __version__, "git": env.git_revision(), "rules_digest": engine.rules_digest,
                "vocabulary_digest": engine.vocabulary_digest, "thresholds": engine.thresholds_path,
                "corpus_digest": self.corpus.digest}


def _redecide_run(store: RunStore, run: RunRow, deciders: _Deciders, dry_run: bool) -> RunRedecision:
    try:
        return _decide_again(store, run, deciders, dry_run)
    except _LeftAlone as why:
        return RunRedecision(run.name, REFUSED, str(why))
    except EnvironmentProblem:
        raise      # the store busy, the disk full: not this run's problem, the command stops
    except InputError as problem:   # this run's task or files: the others go on
        return RunRedecision(run.name, REFUSED, problem.message)


class _LeftAlone(Exception):
    """Why a run is not re-decided (one line)."""


def _decide_again(store: RunStore, run: RunRow, deciders: _Deciders, dry_run: bool) -> RunRedecision:
    waiting, idx = _round_to_redecide(store, run)
    latest = store.decisions(run.id, idx)
    if not dry_run and waiting and latest and _finish_files(store, run, waiting, latest[-1]["id"]) is not False:
        waiting, idx = _waiting_round(store, run)   # an earlier redecide, interrupted after its commit, finished
    reopening = waiting is None   # a run that ended no-candidate: its last round
    seen = store.last_event_id(run.id)
    settings = Settings.from_stored(run.manifest.get("settings") or {})
    if not settings.engine:
        raise _LeftAlone(f"{run.name} runs with the engine off (--no-engine): its coder chooses each optimization, "
                         "there is no decision to re-make")
    decisions = store.decisions(run.id, idx)
    old = store.step_result(run.id, f"r{idx}/decision")
    evidence_step = store.step_result(run.id, f"r{idx}/evidence")
    if not decisions or old is None or evidence_step is None:
        raise _LeftAlone(f"{run.name}'s round {idx} has no decision recorded")
    kernel = unchanged_task(run)
    # the tabu list and memory as the loop built them for this round (its evidence holds that memory already)
    state = replayed_state(store, run.id, kernel.read_text(), idx)
    started = next((r["kernel"] for r in store.rounds(run.id) if r["idx"] == idx), None)
    if state is None or state.best_digest != started:
        raise _LeftAlone(f"{run.name}'s steps before round {idx} do not replay to the kernel the round started from")

    engine = deciders.engine(tuple(settings.extra_rules))
    corpus = deciders.corpus
    spec = load_task(kernel)
    # where the kernel stands as the run's prompts show it: the decision holds it against --stop-at-floor
    standing = recorded_standing(run, kernel, spec)
    decide = make_decide(settings.agent, engine, corpus, mechanical_applier(corpus, settings), engine_on=True,
                         standing=standing, stop_at_floor=settings.stop_at_floor)
    stored = Evidence.from_json(store.artifacts.get_text(evidence_step["document"]))
    # the round's measurements with today's reading of its kernel's source (what `resume --more-rounds` records)
    evidence = with_todays_static(stored, kernel, state.best_source)
    new, trace_text = decision_of(*decide(evidence, state), state.tabu, started)
    rules = deciders.record(engine)
    found = dict(run=run.name, round=idx, old_skill=old["skill"], old_params=old["params"], new_skill=new["skill"],
                 new_params=new["params"], rules=rules, static=static_refresh_line(evidence.producer))
    if old["skill"] is None and old.get("stop") and not reopening:
        # an earlier redecide ended this round and was interrupted before the run was marked finished
        if not dry_run:
            _end_run(store, run, idx, old["stop"], state)
        return RunRedecision(action=UNCHANGED, reason=old["reason"], **found)
    if (new["skill"], new["params"]) == (old["skill"], old["params"]) or (reopening and new["skill"] is None):
        # (a run that ended no-candidate, still without one: near its floor now or not, it stays ended)
        return RunRedecision(action=UNCHANGED, reason=new["reason"] if reopening else old["reason"], **found)
    if new["skill"] is None and not new.get("stop"):
        raise _LeftAlone(f"the current rules leave {run.name}'s round {idx} no applicable candidate "
                         f"({new['reason']}); it keeps {old['skill']}")

    # The new prompt, exactly as the run's external applier writes it for this try (none when the round
    # ends the run: the kernel near its floor with nothing of the engine's left, as the loop decides; none
    # for a reopened run of another agent: its loop asks its coder when `resume` goes on).
    external = not reopening or settings.agent == "external"
    prompts = prompt_builder(kernel, spec, corpus, standing)
    folder = run_folder(store, run.id)
    applier = ExternalApplier(prompts, folder)
    key = attempt_key(idx, 0, 0)
    candidate = next((Candidate.from_stored(c) for c in new["candidates"] if c["skill"] == new["skill"]), None)
    request = ApplyRequest(skill=new["skill"] or old["skill"], attempt=0, key=key, candidate=candidate,
                           params=applier.variants(new["skill"], new["params"], state)[0] if new["skill"] else {},
                           diagnosis=diagnosis_of(new["candidates"], new["skill"]))
    prompt = prompts.build(request, state) if new["skill"] and external else None
    path = applier.prompt_path(request)
    old_id = decisions[-1]["id"]
    superseded = path.with_name(path.name.removesuffix(".prompt.md") + f".superseded-d{old_id}.prompt.md")
    aside = (waiting.candidate_path.parent / "superseded" / f"{run.name}.{key.replace('/', '-')}.d{old_id}.cu"
             if waiting else None)
    reopened = None
    if reopening:
        then = (f"paused at its round {idx} prompt" if prompt is not None
                else f"interrupted: `skillbase resume {run.name}` goes on"
                     + ("" if not run.manifest.get("gpu_run", True) else " (on a GPU machine)"))
        reopened = f"the run had ended here: {run.stop_reason or 'no candidate'}; {then}, its --rounds unchanged"
    found.update(reason=new["reason"], prompt=str(path) if prompt else None,
                 superseded_prompt=None if reopening else str(superseded), reopened=reopened)
    if dry_run:
        return RunRedecision(action=WOULD_CHANGE, **found)

    staged = path.with_name(path.name + STAGED)
    staged_text = prompt.text.encode("utf-8") if prompt is not None else None
    record = {"old_skill": old["skill"], "old_params": old["params"], "skill": new["skill"], "params": new["params"],
              "reason": new["reason"], "rules": rules, "key": key, "prompt": str(path),
              "superseded_prompt": str(superseded), "candidate_aside": str(aside) if aside else None,
              "kind": prompt.role if prompt else None, "template": prompt.template.name if prompt else None,
              "stop": new["stop"], "reopened": reopening, "static": evidence.producer.get(STATIC_REFRESH),
              # which staged file is this decision's prompt (not one of a redecide killed before its commit)
              "prompt_sha256": hashlib.sha256(staged_text).hexdigest() if staged_text is not None else None}
    status = RunStatus.PAUSED if prompt is not None else RunStatus.INTERRUPTED
    stop_reason = new["stop"] or (str(Paused(new["skill"], path)) if prompt is not None
                                  else f"round {idx} re-decided ({new['skill']}); `skillbase resume {run.name}` "
                                       "goes on")
    restore = None
    if staged_text is not None:
        try:
            staged.parent.mkdir(parents=True, exist_ok=True)
            staged.write_bytes(staged_text)
            if reopening:
                # a finished run's waiting.json is read by nothing: the reopened run's is written before the
                # commit, so the run is never paused with an earlier round's request (`_move_files` then puts
                # the prompt it names in place)
                restore = _write_waiting(folder, record)
        except OSError as error:
            if staged.is_file():   # staged, then its waiting.json failed
                staged.unlink()
            raise EnvironmentProblem(f"cannot stage {run.name}'s new prompt: {_failed(error)}; nothing was re-decided",
                                     hint=f"make {staged.parent} writable (or move away what is at {staged.name}) "
                                          f"and run `skillbase redecide {run.name}` again") from None
    try:
        with store.transaction() as tx:
            # every write to a run adds an event: one since we read it is another process's (a resume)
            now = store.get_run(run.id)
            if store.last_event_id(run.id) != seen or now.status != (RunStatus.FINISHED if reopening
                                                                     else RunStatus.PAUSED):
                raise _LeftAlone(f"{run.name} changed while it was re-decided (another skillbase process?); "
                                 "nothing was written")
            tx.supersede_decision(run.id, idx, old_id, f"r{idx}/decision", new, store.artifacts.put_text(trace_text),
                                  record, stop_reason)
            if evidence is not stored:
                # the document decided on is the round's evidence from now on (its last row, as the loop's is)
                document = store.artifacts.put_text(evidence.to_json())
                tx.add_evidence(run.id, idx, started, document, None)
                tx.finish_step(run.id, f"r{idx}/evidence", {**evidence_step, "document": document})
            if reopening:
                tx.reopen_round(run.id, idx, status, stop_reason, {
                    "why": f"redecided: no candidate under rules {_rules_of(store, run, old_id)} -> {new['skill']} "
                           f"under rules {rules['rules_digest']}",
                    "ended": run.stop_reason, "status": status, "skill": new["skill"], "rules": rules})
            elif new["stop"]:
                # the round ends as the loop ends a round with no candidate (Loop._round)
                tx.finish_round(run.id, idx, Outcome.NO_CANDIDATE)
                tx.finish_step(run.id, f"r{idx}/outcome", {"status": Outcome.NO_CANDIDATE})
    except BaseException:
        staged.unlink(missing_ok=True)
        if restore is not None:
            restore()
        raise
    if reopening and prompt is None:
        return RunRedecision(action=CHANGED, **found)    # interrupted: `resume` goes on, no file to move
    if reopening:
        waiting = next(iter(pending_in(store, run_id=run.id)), None)   # paused now, at the waiting.json above
        if waiting is None:
            raise EnvironmentProblem(f"{run.name} was reopened at round {idx} but its waiting.json cannot be read",
                                     hint=f"`skillbase resume {run.name}` writes its prompt again")
    moved = _finish_files(store, run, waiting, None)
    if new["stop"]:
        _end_run(store, run, idx, new["stop"], state)
    return RunRedecision(action=CHANGED, candidate_moved=str(moved) if isinstance(moved, Path) else None, **found)


def _rules_of(store: RunStore, run: RunRow, decision_id: int) -> str | None:
    """The rules digest that made decisions row `decision_id`: an earlier `redecide`'s, else the run's own."""
    made = next((m for m in store.superseded_decisions(run.id).values() if m.get("by") == decision_id), None)
    return ((made or {}).get("rules") or {}).get("rules_digest") or run.manifest.get("rules_digest")


def _write_waiting(folder: Path, record: dict) -> Callable[[], None]:
    """The run's `waiting.json` for the re-decision `record`; returns what puts the one it replaced back."""
    path = folder / "waiting.json"
    before = path.read_bytes() if path.is_file() else None
    write_waiting(folder, record["key"], record["skill"], record["kind"], Path(record["prompt"]), record["template"])

    def restore() -> None:
        if before is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(before)
    return restore


def _end_run(store: RunStore, run: RunRow, idx: int, stop: str, state: LoopState) -> None:
    """A run whose round `idx` ended with no candidate, finished as `Loop.run` finishes it (its files moved
    first: a run interrupted before this is still paused, and the next redecide or resume ends it)."""
    store.update_run(run.id, status=RunStatus.FINISHED, stop_reason=stop, finished_at=time.time(),
                     best_us=state.best_us, best_kernel=store.artifacts.put_text(state.best_source))
    (run_folder(store, run.id) / "waiting.json").unlink(missing_ok=True)   # nothing waits any more


def _round_to_redecide(store: RunStore, run: RunRow) -> tuple[PendingPrompt | None, int]:
    """A paused run's waiting request and round (`_waiting_round`), or (None, its last round) for a run that
    ended no-candidate; anything else is left alone, saying how it stands."""
    if run.status == RunStatus.PAUSED:
        return _waiting_round(store, run)
    ended, reason = run_ended(store, run)
    if ended == Ended.NO_CANDIDATE:
        return None, store.rounds(run.id)[-1]["idx"]
    status = store.shown_status(run)
    raise _LeftAlone(f"{run.name} is {status}" + (f", ended {ended}" + (f" ({reason})" if reason else "")
                                                  if status == RunStatus.FINISHED else "")
                     + "; only a paused run's waiting round or a run that ended no-candidate is re-decided")


def _waiting_round(store: RunStore, run: RunRow) -> tuple[PendingPrompt, int]:
    """The run's waiting request and its round, when it is a round's first prompt with nothing judged yet."""
    waiting = next(iter(pending_in(store, run_id=run.id)), None)
    if waiting is None:
        raise _LeftAlone(f"{run.name} has no readable waiting request (its waiting.json); "
                         f"`skillbase resume {run.name}` writes it again")
    if waiting.kind == GENERATOR:
        raise _LeftAlone(f"{run.name} waits for its first kernel (the generator prompt); no round is decided yet")
    idx = waiting.round
    if store.attempts(run.id, idx) or waiting.key != attempt_key(idx, 0, 0):
        raise _LeftAlone(f"{run.name}'s round {idx} already judged an attempt")
    return waiting, idx


def _finish_files(store: RunStore, run: RunRow, waiting: PendingPrompt, current: int | None) -> Path | None | bool:
    """`_move_files`, a file error (a file where a folder goes, a full disk) one line: the store has the
    re-decision already, and the next `redecide` of the run finishes the moves."""
    try:
        return _move_files(store, run, waiting, current)
    except OSError as error:
        raise EnvironmentProblem(f"cannot move {run.name}'s files after its re-decision: {_failed(error)}",
                                 hint=f"the store has the new decision; clear the way (or free space) and run "
                                      f"`skillbase redecide {run.name}` again: it finishes the moves") from None


def _failed(error: OSError) -> str:
    """What an OSError of a file operation says, with the path it failed on."""
    return f"{error.filename}: {error.strerror or error}" if error.filename else str(error.strerror or error)


def _move_files(store: RunStore, run: RunRow, waiting: PendingPrompt, current: int | None) -> Path | None | bool:
    """The file moves of the run's last re-decision, each done once (so an interrupted one is finished by
    the next call): the stale candidate aside, the old prompt renamed, the new one in place, then
    `waiting.json`. `current`: only when that re-decision made decisions row `current` (the round's
    latest; None: right after this call's own commit). Returns where a candidate was moved (None: none was
    there), or False when nothing was left to do."""
    marks = [m for m in store.superseded_decisions(run.id).values() if m.get("key") == waiting.key]
    mark = marks[-1] if marks else None
    if mark is None or (current is not None and mark.get("by") != current):
        return False
    # the recorded paths' names, in the folders of this store: `store unpack` elsewhere moves the folders
    folder = run_folder(store, run.id)
    prompt = folder / Path(mark["prompt"]).name
    staged = prompt.with_name(prompt.name + STAGED)
    stop = mark.get("stop")
    if staged.exists() and not _marks_prompt(mark, staged, waiting):
        staged.unlink()   # left by a redecide killed before its commit: never this round's prompt
    if stop and not prompt.exists() and not waiting.candidate_path.is_file():
        return False   # done: the old prompt renamed, no candidate left to move
    if not stop and not staged.exists() and waiting.skill == mark["skill"]:
        return False   # done
    moved = None
    # written for the prompt still in place: the old one (a reopened round had none: a file there answered an
    # earlier round, was judged, and is refused as already judged if handed in again)
    if waiting.candidate_path.is_file() and not mark.get("reopened"):
        moved = _unique(waiting.candidate_path.parent / "superseded" / Path(mark["candidate_aside"]).name)
        moved.parent.mkdir(parents=True, exist_ok=True)
        os.replace(waiting.candidate_path, moved)
        if waiting.meta_path.is_file():
            os.replace(waiting.meta_path, moved.with_suffix(".meta.json"))
        now = (f"ends the run ({stop})" if stop else f"asks for {mark['skill']} ({prompt})")
        moved.with_suffix(".note.txt").write_text(
            f"{run.name}'s round {mark['round']} was re-decided on {time.strftime('%Y-%m-%d %H:%M:%S')} "
            f"(skillbase redecide): this candidate answered the prompt for {mark['old_skill']}, and the round now "
            f"{now}. It was moved here from {waiting.candidate_path} so that it is not judged for "
            f"{'nothing' if stop else 'the new skill'}; nothing reads it from here.\n")
        store.note_waiting(run.id, mark["key"], f"re-decided: {mark['old_skill']} -> {mark['skill'] or 'none'}; the "
                                                f"candidate written for {mark['old_skill']} was moved to {moved}")
    if stop:   # no new prompt: the old one is kept under its superseded name, nothing waits any more
        superseded = folder / Path(mark["superseded_prompt"]).name
        if prompt.exists() and not superseded.exists():
            os.replace(prompt, superseded)
        return moved
    if staged.exists():
        superseded = folder / Path(mark["superseded_prompt"]).name
        if prompt.exists() and not superseded.exists():
            os.replace(prompt, superseded)
        os.replace(staged, prompt)
    write_waiting(folder, mark["key"], mark["skill"], mark["kind"], prompt, mark["template"])
    return moved


def _marks_prompt(mark: dict, staged: Path, waiting: PendingPrompt) -> bool:
    """Whether `staged` is the prompt the re-decision `mark` committed: its digest is the one recorded. A
    mark recorded before digests were (an older store) owns a staged prompt only while `waiting.json`
    still names another skill than the mark's, that is while its moves are unfinished."""
    if "prompt_sha256" not in mark:
        return waiting.skill != mark["skill"]
    recorded = mark["prompt_sha256"]
    return recorded is not None and hashlib.sha256(staged.read_bytes()).hexdigest() == recorded


def _unique(path: Path) -> Path:
    """`path`, or `path` numbered when a file is there already: nothing moved aside overwrites another."""
    candidate, n = path, 1
    while candidate.exists():
        candidate, n = path.with_name(f"{path.stem}.{n}{path.suffix}"), n + 1
    return candidate


def _named(skill: str | None, params: dict[str, Any] | None) -> str:
    return (skill or "none") + (f" {json.dumps(params, sort_keys=True)}" if params else "")
