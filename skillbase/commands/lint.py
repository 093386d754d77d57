"""`skillbase lint K.cu…`: the static check alone (no GPU, no build), for editors and CI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click


@click.command("lint")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "github"]), default="text",
              show_default=True,
              help="text: path:line:col lines; json: skillbase's document; sarif: SARIF 2.1.0 (code scanning); "
                   "github: workflow-command annotations.")
@click.option("--allow", multiple=True, metavar="LIBRARY",
              help="Allow this library (as a task spec's `allow:` does); repeatable. A spec beside a kernel "
                   "is read too.")
def lint(paths: tuple[Path, ...], fmt: str, allow: tuple[str, ...]) -> None:
    """Statically check PATHS (.cu files or folders of them): banned APIs and patterns, each with its reason.

    Exits 1 when an error-level finding is reported, 0 otherwise (warnings do not fail).
    """
    from skillbase.harness.lint import lint_files

    report = lint_files(list(paths), allow=allow)
    if fmt == "json":
        click.echo(json.dumps(report.to_json(), indent=1))
    elif fmt == "sarif":
        click.echo(json.dumps(report.to_sarif(), indent=1))
    elif fmt == "github":
        for line in report.github_lines():
            click.echo(line)
    else:
        for line in report.text_lines():
            click.echo(line)
    if not report.ok:
        sys.exit(1)   # click returns (not raises) Exit codes when not standalone
