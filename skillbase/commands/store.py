"""`skillbase store pack FILE.tar.gz` / `skillbase store unpack FILE.tar.gz`: the run store in one file."""

from __future__ import annotations

import json
from pathlib import Path

import click

from skillbase.commands.options import json_option, store_option


@click.group("store")
def store() -> None:
    """Carry the run store to a GPU machine and back in one file."""


@store.command("pack")
@click.argument("archive", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace ARCHIVE if it exists.")
@click.option("--without-reports", is_flag=True,
              help="Leave the saved Nsight Compute reports out (judging needs none; unpacking keeps those a "
                   "store already holds): a far smaller archive for the trip to a GPU machine.")
@store_option
@json_option
def pack(archive, force, without_reports, store_path, as_json):
    """Write the store (a consistent copy of its database, its artifacts, prompts and candidates) to ARCHIVE."""
    from skillbase.run.pack import pack_store

    done = pack_store(archive, store_path, force=force, reports=not without_reports)
    if as_json:
        click.echo(json.dumps(done.to_json(), indent=1))
    else:
        click.echo(f"packed {done.runs} runs ({done.files} files) from {done.store} into {done.archive} "
                   f"({done.bytes / 1e6:.1f} MB)")


@store.command("unpack")
@click.argument("archive", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--force", is_flag=True, help="Replace the runs of an existing store with the archive's.")
@store_option
@json_option
def unpack(archive, force, store_path, as_json):
    """Extract ARCHIVE into the store (--store), its paths rewritten to this machine's folders."""
    from skillbase.run.pack import unpack_store

    done = unpack_store(archive, store_path, force=force)
    if as_json:
        click.echo(json.dumps(done.to_json(), indent=1))
    else:
        click.echo(f"unpacked {done.runs} runs ({done.files} files) from {done.archive} into {done.store}")
