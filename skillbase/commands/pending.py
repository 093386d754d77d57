"""`skillbase pending`: every paused run's open prompt and where its candidate is expected."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from skillbase.commands.options import json_option, store_option

if TYPE_CHECKING:
    from skillbase.run.batch import BatchOutcome
    from skillbase.run.pending import PendingPrompt


@click.command("pending")
@click.option("--batch", "batch", default=None, help="Only the runs of this batch (batch_N).")
@json_option
@store_option
def pending(batch, as_json, store_path):
    """List the runs waiting for a candidate: prompt, coder or debugger, round, skill, where to write."""
    from skillbase.run.pending import pending as open_prompts

    waiting = open_prompts(store_path, batch=batch)
    if as_json:
        click.echo(json.dumps(waiting.to_json(), indent=1))
        return
    found = waiting.prompts
    if not found:
        click.echo("no run is waiting for a candidate")
        return
    _print_pending(found)


def _print_pending(found: list[PendingPrompt]) -> None:
    for p in found:
        what = f"{p.operator} {p.dtype}" if p.operator else p.task
        click.echo(f"{p.run} ({what}{', ' + p.batch if p.batch else ''}): {p.kind} round {p.round}"
                   f"{f' repair {p.attempt}' if p.attempt else ''}, {p.skill}")
        click.echo(f"  prompt:    {p.prompt_path or '(gone: `skillbase resume ' + p.run + '` writes it again)'}")
        click.echo(f"  candidate: {p.candidate_path}")
        if p.waiting:
            click.echo(f"  waiting:   {p.waiting}")
    click.echo(f"{len(found)} waiting; write each candidate, then: skillbase resume --all")


def print_batch_outcome(outcome: BatchOutcome, as_json: bool) -> None:
    """What `bench optimize` and `resume --all` did to each run, then what waits now."""
    data = outcome.to_json()
    if as_json:
        click.echo(json.dumps(data, indent=1))
        return
    for member in outcome.members:
        click.echo(f"{member.label}: {member.action} -- {member.reason}")
    counts = ", ".join(f"{n} {action}" for action, n in sorted(data["counts"].items()))
    click.echo(f"{outcome.batch or 'every batch'}: {counts or 'nothing to do'}")
    if outcome.pending:
        _print_pending(outcome.pending)
