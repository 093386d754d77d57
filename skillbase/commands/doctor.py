"""`skillbase doctor`: one line per tool the harness needs, ok or missing with the fix."""

from __future__ import annotations

import json
import sys

import click

from skillbase.commands.options import json_option


@click.command("doctor")
@click.option("--no-probe", is_flag=True, help="Do not profile a test kernel to check counter access.")
@click.option("--require-profiler", is_flag=True, help="Treat ncu and readable counters as required.")
@json_option
def doctor(no_probe, require_profiler, as_json):
    """Check the GPU, driver, compute capability, nvcc, CuPy, ncu (and counter access), compute-sanitizer.

    Exits non-zero when something required is missing.
    """
    from skillbase.harness.doctor import as_json as to_json
    from skillbase.harness.doctor import run_checks

    checks = run_checks(probe_counters=not no_probe, require_profiler=require_profiler)
    report = to_json(checks)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        # Plain lines, not a table: fixes are long and must stay readable in a narrow terminal.
        width = max(len(c.name) for c in checks)
        for c in checks:
            status = c.status if c.required or c.status == "ok" else f"{c.status} (optional)"
            click.echo(f"{c.name:<{width}}  {status:<18} {c.detail}")
            if c.fix and c.status != "ok":
                click.echo(f"{'':<{width}}  {'':<18} fix: {c.fix}")
    if not report["ok"]:
        sys.exit(1)   # click returns (not raises) Exit codes when not standalone
