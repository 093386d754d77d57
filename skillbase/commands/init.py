"""`skillbase init K.cu`: draft K.task.yaml from the extern "C" launcher's signature (`skillbase.task.draft`),
write it, and print every guess and TODO left to check, one line each."""

from __future__ import annotations

from pathlib import Path

import click

from skillbase.errors import InputError
from skillbase.task.draft import draft_spec
from skillbase.task.spec import spec_path_for


@click.command("init")
@click.argument("kernel", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--launcher", default=None,
              help="The extern \"C\" function to draft for (needed when there are several).")
@click.option("--force", is_flag=True, help="Overwrite an existing K.task.yaml.")
def init(kernel: Path, launcher: str | None, force: bool) -> None:
    """Draft KERNEL's task spec (K.task.yaml) from its launcher's signature."""
    kernel_path, spec_path = spec_path_for(kernel)
    if spec_path.exists() and not force:
        raise InputError(f"{spec_path} already exists; not overwriting it", hint="pass --force to replace it")
    text, todo = draft_spec(kernel_path, launcher)
    spec_path.write_text(text)
    click.echo(f"wrote {spec_path}")
    if todo:
        click.echo(f"to do before `skillbase check {kernel_path}` ({len(todo)}):")
        for line in todo:
            click.echo(f"  {line}")
