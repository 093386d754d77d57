"""`skillbase report run_N`: Markdown and a self-contained HTML page for a run."""

from __future__ import annotations

import json

import click

from skillbase.commands.options import json_option, store_option


@click.command("report")
@click.argument("run_ref")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default=".", show_default=True,
              help="Folder for RUN.md and RUN.html.")
@click.option("--force", is_flag=True, help="Overwrite existing report files.")
@json_option
@store_option
def report(run_ref, out_dir, force, as_json, store_path):
    """Write RUN_REF's report as RUN.md and a self-contained RUN.html: the run, every round's outcome,
    skillbase's advice beside Nsight Compute's guided analysis per round, and (HTML) plots of the best
    speedup per round and of the roofline with each round's kernel."""
    from skillbase.run.report import write_report
    from skillbase.run.store import RunStore

    written = write_report(RunStore.open(store_path, read_only=True), run_ref, out_dir, force=force)
    if as_json:
        click.echo(json.dumps(written.to_json(), indent=1))
        return
    click.echo(f"wrote {written.markdown} and {written.html}")
