"""`skillbase init K.cu`: draft K.task.yaml from the extern "C" launcher's signature (`skillbase.task.draft`),
write it, and print every guess and TODO left to check, one line each."""

from __future__ import annotations

import json
from pathlib import Path

import click

from skillbase.commands.options import json_option
from skillbase.task.draft import write_draft


@click.command("init")
@click.argument("kernel", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--launcher", default=None,
              help="The extern \"C\" function to draft for (needed when there are several).")
@click.option("--force", is_flag=True, help="Overwrite an existing K.task.yaml.")
@json_option
def init(kernel: Path, launcher: str | None, force: bool, as_json: bool) -> None:
    """Draft KERNEL's task spec (K.task.yaml) from its launcher's signature."""
    drafted = write_draft(kernel, launcher, force=force)
    if as_json:
        click.echo(json.dumps(drafted.to_json(), indent=1))
        return
    click.echo(f"wrote {drafted.spec}")
    if drafted.todo:
        click.echo(f"to do before `skillbase check {drafted.kernel}` ({len(drafted.todo)}):")
        for line in drafted.todo:
            click.echo(f"  {line}")
