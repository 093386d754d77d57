"""`skillbase resume RUN --more-rounds N` (and `resume --all --more-rounds N`): more rounds for runs that spent theirs.

A run that ended for reason `rounds` (`loop.run_ended`: every round of its --rounds spent) is reopened with
its --rounds raised by N and continued exactly as the loop would have gone on had --rounds been larger: its
steps replay from the store and the first new round's decision is made by the same Decide the session wires.
Any other end (near the floor, no candidate left, a budget, failed) is left as it is, with a one-line reason;
a run not ended (running, paused, interrupted) is an error for `resume RUN`, and passed over by `--all`.

The reopening is one store transaction (`_Tx.add_rounds`): the manifest's settings with the raised
--rounds, the run `interrupted` (so a reopening killed before the run went on is continued by `resume`,
and a batch member by `resume --all`), and a `rounds-added` event (when, from how many rounds to how many,
why; `explain` shows it). Where the run already holds evidence of its current best kernel (its last round
accepted nothing, so that round's evidence describes the kernel the next round starts from), the first new
round's evidence step is recorded in the same transaction from that document, with the run's memory of
today as its history and the static features of its kernel recomputed by today's analyser
(`run.evidence.with_todays_static`, as `redecide` reads a stored round): the decision then needs no GPU.
Then the run goes on: on its own GPU (or a compile-only run, anywhere) through `resume_run`; away from its
GPU, an `--agent external` run whose next evidence is recorded goes on to its next prompt (`pending` lists
it) and anything else stays reopened, `interrupted`, for `resume` on a GPU machine (its new kernel must be
profiled first, or judged).

`--below-floor F` (with --all) picks the runs whose best kernel runs below F of its roofline floor, the
run's standing as its prompts and --stop-at-floor read it (`session.recorded_standing`); a run with no
known floor (no work model, no datasheet for its GPU, a compile-only run) is not picked: name it to reopen it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from skillbase import __version__
from skillbase.errors import InputError, SkillbaseError
from skillbase.evidence import Evidence
from skillbase.harness import env
from skillbase.run.batch import BatchOutcome, MemberOutcome
from skillbase.run.evidence import STATIC_REFRESH, with_history, with_todays_static
from skillbase.run.loop import record_evidence, replayed_state, run_ended
from skillbase.run.pending import pending_in
from skillbase.run.session import recorded_standing, resume_run, unchanged_task
from skillbase.run.store import RunRow, RunStore, batch_name, parse_batch_ref
from skillbase.run.types import MAX_ROUNDS, Ended, LoopState, MemberAction, RunStatus, Settings
from skillbase.task import load_task

BELOW_FLOOR = 0.5            # --all's default: runs below half their roofline floor


class _LeftAlone(Exception):
    """Why a run is not reopened (one line)."""


def reopen(store_path=None, runs: Sequence[str | int] = (), more_rounds: int = 1, *, all_runs: bool = False,
           below_floor: float | None = None, batch: str | int | None = None, go_on: bool = True,
           progress: Callable[[int, int, str], None] | None = None) -> BatchOutcome:
    """Give `runs` (or, `all_runs`, every run of the store or of `batch` that ended for `rounds` with its best
    below `below_floor` of its roofline floor, default `BELOW_FLOOR`) `more_rounds` more rounds and continue
    each (`go_on`; False: reopen only, for `resume` to continue). Bad input (no such run, a run not ended, N
    out of range) raises InputError before anything is written. `progress(done, total, line)` after each run."""
    if isinstance(more_rounds, bool) or not isinstance(more_rounds, int) or not 1 <= more_rounds <= MAX_ROUNDS:
        raise InputError(f"--more-rounds {more_rounds!r}: give a whole number of rounds from 1 to {MAX_ROUNDS}",
                         hint="skillbase resume RUN --more-rounds 2")
    if all_runs == bool(runs):
        raise InputError("which runs? pass RUN, or --all for every run that spent its rounds, not both",
                         hint="`skillbase runs --status finished` lists the finished runs")
    if not all_runs and (below_floor is not None or batch is not None):
        raise InputError("--below-floor and --batch go with --all", hint="skillbase resume --all --more-rounds 2 "
                                                                           "--below-floor 0.5 --batch batch_1")
    share = BELOW_FLOOR if below_floor is None else below_floor
    if all_runs and not share > 0:
        raise InputError(f"--below-floor {share:g}: give a share of the roofline floor above 0",
                         hint="0.5 picks the runs below half their floor")
    store = RunStore.open(store_path)
    try:
        wanted = parse_batch_ref(batch) if batch is not None else None
        if all_runs:
            if wanted is not None:
                store.get_batch(wanted)     # an unknown batch is an error, not an empty answer
            members = {m.run_id for m in store.batch_members(wanted)}
            # the runs that ended (finished or failed): those not ended yet are not --all's to reopen
            rows = sorted((r for r in store.list_runs() if r.status in (RunStatus.FINISHED, RunStatus.FAILED)
                           and (wanted is None or r.id in members)), key=lambda r: r.id)
        else:
            rows = [store.get_run(ref) for ref in runs]
            for row in rows:            # every named run checked before any is reopened
                _require_ended(store, row)
        outcome = BatchOutcome(batch_name(wanted) if wanted is not None else None)
        for row in rows:
            outcome.members.append(_reopen_one(store, row, more_rounds, share if all_runs else None, go_on))
            if progress is not None:
                done = outcome.members[-1]
                progress(len(outcome.members), len(rows), f"{done.label}: {done.action} -- {done.reason}")
        outcome.pending = pending_in(store, wanted) if all_runs else \
            [p for row in rows for p in pending_in(store, run_id=row.id)]
        return outcome
    finally:
        store.close()


def _require_ended(store: RunStore, run: RunRow) -> None:
    status = store.shown_status(run)
    if status in (RunStatus.RUNNING, RunStatus.PAUSED, RunStatus.INTERRUPTED):
        go_on = {RunStatus.RUNNING: "wait for it to end", RunStatus.PAUSED: "answer its prompt (`skillbase pending`)",
                 RunStatus.INTERRUPTED: f"`skillbase resume {run.name}` continues it"}[status]
        raise InputError(f"{run.name} is {status}, not ended: only a run that ended gets more rounds; nothing was "
                         "changed", hint=go_on)


def _reopen_one(store: RunStore, run: RunRow, more: int, below_floor: float | None, go_on: bool) -> MemberOutcome:
    try:
        goes_on, why = _reopen(store, run, more, below_floor)
    except _LeftAlone as reason:
        return MemberOutcome(run.name, MemberAction.LEFT_ALONE, str(reason), store.shown_status(run), run.name)
    except InputError as problem:        # this run's task or store rows: the others go on
        return MemberOutcome(run.name, MemberAction.LEFT_ALONE, f"{problem.message}; left as it is",
                             store.shown_status(run), run.name)
    if not go_on or not goes_on:
        return MemberOutcome(run.name, MemberAction.REOPENED, why, store.shown_status(store.get_run(run.id)), run.name)
    try:
        summary = resume_run(run.id, store_path=store.location, progress=_quiet)
    except SkillbaseError as problem:    # recorded in the run (failed; `resume` retries): the others go on
        return MemberOutcome(run.name, MemberAction.REOPENED, f"{why}; then: {problem.message}",
                             store.shown_status(store.get_run(run.id)), run.name)
    return MemberOutcome(run.name, MemberAction.REOPENED, f"{why}; then: {summary['stop_reason'] or summary['status']}",
                         summary["status"], run.name)


def _reopen(store: RunStore, run: RunRow, more: int, below_floor: float | None) -> tuple[bool, str]:
    """Reopen `run` (its --rounds raised by `more`) when it ended for `rounds` and, with `below_floor`, stands
    below that share of its floor. Returns whether it can go on here (its GPU is here, it is compile-only, or
    it is an external run whose next round's evidence is recorded: `session.decides_away_from_its_gpu`; else
    only `resume` on its GPU machine goes on) and what was done, in words."""
    ended, reason = run_ended(store, run)
    if ended != Ended.ROUNDS:
        raise _LeftAlone(f"{run.name} ended {ended}" + (f" ({reason})" if reason else "")
                         + "; only a run that spent its --rounds gets more; left as it is")
    seen = store.last_event_id(run.id)
    settings = Settings.from_stored(run.manifest.get("settings") or {})
    kernel = unchanged_task(run)
    state = replayed_state(store, run.id, kernel.read_text(), settings.rounds)
    if state is None:
        raise _LeftAlone(f"{run.name}'s {settings.rounds} rounds do not replay from its store rows; left as it is")
    standing = recorded_standing(run, kernel, load_task(kernel))(state)
    pct = standing.pct_of_floor
    where = (f"at {pct:.0f} % of its roofline floor" if pct is not None
             else f"its roofline floor unknown ({standing.floor_unknown or 'no floor'})")
    if below_floor is not None:
        if pct is None:
            raise _LeftAlone(f"{run.name}: {where}; --below-floor picks only runs with a floor (name it to reopen "
                             "it); left as it is")
        if pct >= 100.0 * below_floor:
            raise _LeftAlone(f"{run.name}: {where}, not below {100.0 * below_floor:.0f} % "
                             f"(--below-floor {below_floor:g}); left as it is")
    first, total = settings.rounds, settings.rounds + more
    why = (f"ended after its {first} rounds {where}"
           + (f", below {100.0 * below_floor:.0f} % (--below-floor {below_floor:g})" if below_floor is not None
              else "; asked for by name"))
    reused = _current_evidence(store, run, state)
    digest = refreshed = None
    if reused is not None:
        evidence = with_history(Evidence.from_json(store.artifacts.get_text(reused[1])), state.memory(),
                                store.skill_outcome_stats(exclude_run=run.id))
        # measured then, the kernel's source read today (as `redecide` reads a stored round)
        evidence = with_todays_static(evidence, kernel, state.best_source)
        refreshed = evidence.producer.get(STATIC_REFRESH)
        digest = store.artifacts.put_text(evidence.to_json())
    gpu_run = bool(run.manifest.get("gpu_run", True))
    here = not gpu_run or env.gpu_name() is not None or (settings.agent == "external" and reused is not None)
    later = (f"round {first}'s evidence reused from round {reused[0]}" if reused
             else f"round {first}'s kernel is profiled first")
    stop = (f"reopened for {more} more round{'s' if more > 1 else ''} ({first} -> {total}; {later}); "
            f"`skillbase resume {run.name}` goes on" + ("" if here else " on a GPU machine"))
    manifest = {**run.manifest, "settings": {**(run.manifest.get("settings") or {}), "rounds": total}}
    record = {"more": more, "from": first, "to": total, "round": first, "why": why, "pct_of_floor": pct,
              "below_floor": below_floor, "ended": reason, "evidence_from": reused[0] if reused else None,
              "static_refresh": refreshed, "skillbase_version": __version__}
    with store.transaction() as tx:
        # every write to a run adds an event: one since we read it is another process's
        if store.last_event_id(run.id) != seen or store.get_run(run.id).status != RunStatus.FINISHED:
            raise _LeftAlone(f"{run.name} changed while it was reopened (another skillbase process?); nothing was "
                             "written")
        tx.add_rounds(run.id, manifest, record, stop)
        if digest is not None:
            record_evidence(tx, run.id, first, state.best_digest, digest)
            tx.finish_step(run.id, f"r{first}/evidence", {"document": digest, "reused_from": reused[0]})
    headline = f"{first} -> {total} rounds ({why})"
    if not here:
        what = "its new rounds judge candidates" if reused is not None else f"round {first}'s kernel is profiled"
        return False, (f"{headline}; {what} on its GPU ({run.manifest.get('gpu') or 'unknown'}), not here: "
                      f"`skillbase resume {run.name}` (a batch's: `skillbase resume --all`) on a GPU machine goes on")
    return True, headline


def _current_evidence(store: RunStore, run: RunRow, state: LoopState) -> tuple[int, str] | None:
    """(round, evidence document) of the run's last round that started from its current best kernel: the
    evidence of the kernel the next round starts from (None: that kernel was never profiled, as when the
    last round accepted it)."""
    for row in reversed(store.rounds(run.id)):
        if row["kernel"] != state.best_digest:
            continue
        step = store.step_result(run.id, f"r{row['idx']}/evidence")
        if step is not None and step.get("document"):
            return row["idx"], step["document"]
    return None


def _quiet(message: str) -> None:
    """A reopened run's own progress lines stay out of the output (its store holds every step)."""

