"""`skillbase redecide (RUN... | --all)`: a paused run's waiting round (or a no-candidate run's last round)
decided again with the current rules."""

from __future__ import annotations

import json

import click

from skillbase import ui
from skillbase.commands.options import json_option, store_option


@click.command("redecide")
@click.argument("runs", nargs=-1)
@click.option("--all", "all_runs", is_flag=True,
              help="Every paused run of the store (of --batch), and every run that ended no-candidate.")
@click.option("--batch", default=None, help="With --all: only this batch's runs (batch_N).")
@click.option("--dry-run", is_flag=True, help="Show each run's old skill -> new skill and why; write nothing.")
@json_option
@store_option
def redecide(runs, all_runs, batch, dry_run, as_json, store_path):
    """Decide the waiting round of paused runs (or the last round of runs that ended no-candidate) again with
    the engine's current rules and skills.

    The round's stored evidence and the run's history are ranked again, without a GPU: the profile,
    timing and ptxas as the round recorded them, the static features of the round's kernel recomputed
    by today's analyser (the stored ones when it cannot read the kernel; each run's line says which
    changed). Where the choice changes, the old decision is kept (`explain` shows it superseded), the
    evidence decided on becomes the round's, the new prompt replaces the old one (kept beside it,
    renamed) and a candidate already written for the old prompt is moved to <candidates>/superseded/.
    Only a run waiting at a round's first prompt, nothing judged yet (or one that ended no-candidate,
    below). A round left no candidate because the kernel is near its roofline floor (the run's
    --stop-at-floor) ends the run, as the loop would.

    A run that ended no-candidate (its rules of the day proposed nothing outside the tabu list) is
    re-asked at that last round: when today's rules propose a skill, the run is reopened there (its
    --rounds unchanged; an event says which rules found nothing and which found the skill): an
    --agent external run pauses at the round's new prompt (`pending` lists it), any other is left
    interrupted for `skillbase resume`. Still no candidate: unchanged, nothing written."""
    from skillbase.errors import InputError
    from skillbase.run.redecide import redecide as redecide_runs

    if all_runs == bool(runs):
        raise InputError("which runs? pass RUN (one or more), or --all for every paused run, not both",
                         hint="`skillbase pending` lists the paused runs")
    if batch and not all_runs:
        raise InputError("--batch goes with --all", hint="skillbase redecide --all --batch batch_N")
    with ui.progress("redecide") as bar:
        outcome = redecide_runs(store_path, runs=runs, batch=batch, dry_run=dry_run,
                                progress=None if as_json else bar.step)
    if as_json:
        click.echo(json.dumps(outcome.to_json(), indent=1))
        return
    click.echo("\n".join(outcome.lines()))
