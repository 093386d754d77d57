"""`skillbase explain run_N`: replay a run's decisions and their evidence from the store alone."""

from __future__ import annotations

import json

import click

from skillbase.commands.options import json_option, store_option


@click.command("explain")
@click.argument("run_ref")
@click.option("--round", "round_idx", type=click.IntRange(0), default=None, help="Only this round.")
@click.option("--fails-only", is_flag=True, help="Only failed attempts, and the rules that did not fire (why not X?).")
@json_option
@store_option
def explain(run_ref, round_idx, fails_only, as_json, store_path):
    """Explain every decision of RUN_REF (e.g. run_42) without re-running anything."""
    from skillbase.run.explain import explain_run, render_text
    from skillbase.run.store import RunStore

    report = explain_run(RunStore.open(store_path, read_only=True), run_ref, round_idx=round_idx, fails_only=fails_only)
    click.echo(json.dumps(report, indent=2, default=str) if as_json else render_text(report))
