"""`skillbase profile K.cu`: ncu report + evidence JSON (`skillbase.profiling`), then the engine's advice."""

from __future__ import annotations

import json
from pathlib import Path

import click

from skillbase import ui
from skillbase.commands.options import json_option


@click.command("profile")
@click.argument("kernel", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--preset", default=None, help="Size preset to profile (default: the first scored preset).")
@click.option("--full", is_flag=True, help="Collect ncu's full set (slower) instead of the metrics the rules read.")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Folder for the .ncu-rep and the evidence JSON.")
@click.option("--timeout", "timeout_s", type=float, default=600.0, show_default=True, help="Seconds before giving up.")
@json_option
def profile(kernel, preset, full, out_dir, timeout_s, as_json):
    """Profile KERNEL (with KERNEL.task.yaml beside it) once at a preset with ncu."""
    from skillbase.api import profile as profile_kernel

    console = ui.console(stderr=True)
    with console.status("profiling") as status:
        profiled = profile_kernel(kernel, preset=preset, full=full, out=out_dir, timeout_s=timeout_s,
                                  progress=lambda message: status.update(message))
    if as_json:
        click.echo(json.dumps(profiled.to_json(), indent=1))
        return
    click.echo(f"report:   {profiled.report}")
    click.echo(f"evidence: {profiled.evidence_path}")
    _advise(profiled.advice.result)


def _advise(result) -> None:
    """Print the engine's ranked skills for the new evidence."""
    if not result.candidates:
        click.echo("advice:   no rule fired")
        return
    click.echo("advice:")
    for rank, c in enumerate(result.candidates[:5], 1):
        speed = f", est. time saved {c.time_saved_fraction:.0%}" if c.time_saved_fraction else ""
        click.echo(f"  {rank}. {c.skill} (score {c.score:.2f}{speed}): {c.because}")
