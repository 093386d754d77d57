"""`skillbase examples`: the bundled example kernels (list them, copy one out to work on)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from skillbase.commands.options import json_option


@click.group("examples")
def examples() -> None:
    """The bundled example kernels, their task specs and saved H200 profiles."""


@examples.command("list")
@json_option
def list_(as_json: bool) -> None:
    """List the bundled examples."""
    from skillbase.examples import examples_json, list_examples

    found = list_examples()
    if as_json:
        click.echo(json.dumps(examples_json(found), indent=1))
        return
    width = max(len(e.name) for e in found)
    for e in found:
        profile = "  (saved H200 profile)" if e.saved_profiles else ""
        click.echo(f"{e.name:<{width}}  {e.summary}{profile}")


@examples.command("copy")
@click.argument("name")
@click.argument("destination", required=False, default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace files of an earlier copy.")
@json_option
def copy(name: str, destination: Path, force: bool, as_json: bool) -> None:
    """Copy example NAME into DESTINATION/NAME/ (default: ./NAME/)."""
    from skillbase.examples import copied_json, copy_example, get_example

    target = copy_example(name, destination, force=force)
    example = get_example(name)
    if as_json:
        click.echo(json.dumps(copied_json(example, target), indent=1))
        return
    click.echo(f"copied {name} to {target}/ ({', '.join(example.files)})")
    kernel = target / f"{name}.cu"
    if example.saved_profiles:
        click.echo(f"next: skillbase advise --report {target / example.saved_profiles[0]} --source {kernel}")
    else:
        click.echo(f"next: skillbase check {kernel}   (on a GPU machine)")
