"""`skillbase runs`: list the runs in the store, filtered by task, skill or outcome."""

from __future__ import annotations

import json
import time

import click

from skillbase import ui
from skillbase.commands.options import json_option, store_option
from skillbase.run.types import RunStatus


@click.command("runs")
@click.option("--task", default=None, help="Only runs whose task name or path contains this text.")
@click.option("--skill", default=None, help="Only runs that tried this skill id.")
@click.option("--status", default=None, type=click.Choice([s.value for s in RunStatus]),
              help="Only runs in this state.")
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True)
@json_option
@store_option
def runs(task, skill, status, limit, as_json, store_path):
    """List optimization runs, newest first."""
    from skillbase.run.store import RunStore

    store = RunStore.open(store_path, read_only=True)
    rows = store.list_runs(task=task, skill=skill, status=RunStatus(status) if status else None, limit=limit)
    if as_json:
        from skillbase.run.explain import runs_document

        click.echo(json.dumps(runs_document(store, rows), indent=2, default=str))
        return
    from rich.table import Table

    table = Table(title=f"runs in {store.location}", title_justify="left")
    for column in ("run", "task", "status", "baseline", "best", "speedup", "created"):
        table.add_column(column, justify="right" if column in ("baseline", "best", "speedup") else "left")
    for r in rows:
        table.add_row(r.name, r.task_name, store.shown_status(r),
                      f"{r.baseline_us:,.1f} µs" if r.baseline_us else "—",
                      f"{r.best_us:,.1f} µs" if r.best_us else "—",
                      f"{r.speedup:.2f}x" if r.speedup else "—",
                      time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at)))
    ui.console().print(table if rows else f"no runs in {store.location} yet (start one with `skillbase optimize K.cu`)")
