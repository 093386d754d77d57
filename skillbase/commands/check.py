"""`skillbase check K.cu`: build, static check, verify (against itself: determinism, spec sanity), time."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from skillbase import ui
from skillbase.commands.options import json_option


@click.command("check")
@click.argument("kernel", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--preset", default=None, help="Time only this size preset (default: every scored preset).")
@click.option("--candidate", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Check this file against KERNEL (the reference), timed interleaved with KERNEL.")
@click.option("--no-time", is_flag=True, help="Verify only.")
@click.option("--timeout", "timeout_s", type=float, default=600.0, show_default=True,
              help="Seconds before the worker is killed (a hang).")
@json_option
def check(kernel, preset, candidate, no_time, timeout_s, as_json):
    """Build, statically check, verify and time KERNEL (KERNEL.task.yaml beside it)."""
    from skillbase.api import check as check_kernel

    console = ui.console(stderr=True)
    with console.status("checking") as status:
        result = check_kernel(kernel, candidate, preset=preset, time=not no_time, timeout_s=timeout_s,
                              progress=lambda message: status.update(message))
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, default=str))
    else:
        render(result, ui.console())
    if result.status != "ok":
        sys.exit(1)   # click returns (not raises) Exit codes when not standalone


def render(result, console) -> None:
    from rich.table import Table

    colour = "green" if result.status == "ok" else ("yellow" if result.status == "quarantined" else "red")
    console.print(f"[bold {colour}]{result.status}[/]: {result.reason or 'compiled, verified and timed'}")
    if result.checks:
        sizes = sorted({c.size for c in result.checks})
        rel = result.max_rel_err()
        console.print(f"verified: {len(result.checks)} calls at {', '.join(sizes)}; "
                      f"max abs error {_g(result.max_abs_err())}, max relative L2 error {_g(rel)}")
    for probe in result.probes:
        mark = "ok" if probe.ok else "FAIL"
        console.print(f"  probe {probe.name}: {mark} ({probe.detail})")
    for note in result.sanity:
        console.print(f"  spec: {note}")
    if result.timings:
        table = Table(show_header=True, header_style="bold")
        for column in ("size", "kernel", "median us", "IQR", "min us", "samples", "GB/s", "GFLOP/s", "floor us",
                       "% of floor", "note"):
            table.add_column(column, justify="right" if column not in ("size", "kernel", "note") else "left")
        for t in result.timings:
            for label, k in t.kernels.items():
                s = k.stats
                note = k.suspicious or ("" if k.cold_l2 else "L2-resident batch: DRAM floor not applied")
                if label == "candidate" and t.speedup is not None:
                    note = (f"{t.speedup:.3f}x ({t.verdict}) " + note).strip()
                table.add_row(t.size, label, f"{s.median_us:.2f}", f"{s.rel_spread:.1%}", f"{s.min_us:.2f}",
                              f"{s.n}x{k.batch}", _rate(k.achieved_bytes_per_s, 1e9),
                              _rate(k.achieved_flops_per_s, 1e9),
                              _g(k.floor_us), f"{k.pct_of_floor:.0f}%" if k.pct_of_floor else "-", note)
        console.print(table)
        for t in result.timings:
            clock = "CUPTI activity records (events kept as the cross-check)" if t.timer == "cupti" else \
                f"CUDA events ({t.timer_note})" if t.timer_note else "CUDA events"
            console.print(f"clock at {t.size}: {clock}")
    if result.peaks:
        console.print(f"measured peaks: copy {result.peaks.get('copy_bytes_per_s', 0) / 1e12:.2f} TB/s, "
                      f"FP32 {result.peaks.get('fp32_flops_per_s', 0) / 1e12:.1f} TFLOP/s"
                      + (f" on {result.device.get('name')}" if result.device.get("name") else ""))


def _g(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def _rate(value, unit) -> str:
    return "-" if not value else f"{value / unit:,.1f}"
