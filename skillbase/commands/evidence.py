"""`skillbase evidence`: turn a profile (and the kernel source) into an evidence JSON document."""

from __future__ import annotations

from pathlib import Path

import click

from skillbase.errors import InputError
from skillbase.evidence.model import Evidence


@click.command("evidence")
@click.argument("report", type=click.Path(path_type=Path))
@click.option("--source", "source", type=click.Path(path_type=Path),
              help="Kernel source (.cu): adds static features and ptxas.")
@click.option("--ptxas", "ptxas_log", type=click.Path(path_type=Path),
              help="An `nvcc -Xptxas -v` log to use instead of compiling.")
@click.option("--details", "details", type=click.Path(path_type=Path),
              help="The `--page details` CSV of the same report: adds ncu's rule results to a raw CSV.")
@click.option("--kernel", "kernel", help="Focus kernel: substring or regex of its name (default: the dominant one).")
@click.option("--arch", default=None,
              help="Architecture for the compile-only ptxas report (default: the `arch:` of the task spec beside "
                   "the source, else this machine's GPU, else sm_90; a task's arch may only be refined).")
@click.option("--preset", default=None,
              help="The size preset REPORT was profiled at (a preset of the task spec beside --source): adds the "
                   "task's work model at that size (roofline bytes and FLOPs).")
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write the JSON here (default: stdout).")
@click.option("--force", is_flag=True, help="Overwrite OUTPUT if it exists.")
@click.option("--summary", is_flag=True, help="Print a short human summary instead of (or, with -o, besides) the JSON.")
def evidence(report: Path, source: Path | None, ptxas_log: Path | None, details: Path | None, kernel: str | None,
             arch: str | None, preset: str | None, output: Path | None, force: bool, summary: bool) -> None:
    """Convert REPORT (.ncu-rep, raw-page .csv, evidence .json, or a bare .cu) into an evidence JSON."""
    from skillbase.api import make_evidence

    if output is not None and output.exists() and not force:
        raise InputError(f"{output} exists; not overwriting it", hint="pass --force to replace it")
    result = make_evidence(report, source, kernel=kernel, ptxas=ptxas_log, details=details, arch=arch, preset=preset)
    text = result.to_json()
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n")
    if summary:
        click.echo(render_summary(result))
    elif output is None:
        click.echo(text)


def render_summary(result: Evidence) -> str:
    """A few lines a person reads: device, kernels with time share, focus and the notable resources."""
    lines = []
    device = result.device
    if device.get("name"):
        lines.append(f"device   {device['name']} (CC {device.get('compute_capability')}, {device.get('sm_count')} SMs)")
    for record in sorted(result.kernels, key=lambda k: -(k.duration_ns or 0)):
        mark = "*" if record.name == result.focus_kernel else " "
        duration = f"{record.duration_ns / 1000:.1f} us" if record.duration_ns is not None else "? us"
        share = f"{100 * record.time_share:.0f}%" if record.time_share is not None else "?"
        lines.append(f"kernel {mark} {record.name}: {record.launches} launch(es), {duration}, {share} of GPU time, "
                     f"{len(record.metrics)} metrics, {len(record.ncu_rules)} ncu rule results")
    lines.append(f"focus    {result.focus_kernel} ({result.focus_reason})")
    p = result.focus_ptxas()
    if p:
        lines.append(f"ptxas    {p.get('registers')} registers, {p.get('shared_bytes')} B smem, "
                     f"{p.get('spill_store_bytes')} B spill stores, {p.get('stack_frame_bytes')} B stack")
    k = result.focus_static()
    if k:
        g = k["global_access"]
        lines.append(f"source   line {k['line']}: {g['coalesced']} coalesced / {g['strided']} strided / "
                     f"{g['broadcast']} broadcast global accesses, {k['shared']['static_bytes']} B static smem")
    if result.roofline and result.roofline.get("arithmetic_intensity_flop_per_byte") is not None:
        r = result.roofline
        lines.append(f"roofline {r['arithmetic_intensity_flop_per_byte']:.3g} FLOP/byte, "
                     f"{r.get('achieved_flops_per_s', 0) / 1e9:.1f} GFLOP/s, "
                     f"{r.get('achieved_dram_bytes_per_s', 0) / 1e9:.1f} GB/s DRAM")
    for note in result.notes:
        lines.append(f"note     {note}")
    return "\n".join(lines)
