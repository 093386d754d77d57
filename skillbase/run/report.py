"""A run's report: Markdown, and a self-contained HTML page with two plots (matplotlib, inline SVG).

Plots: the best verified speedup after each round, and the roofline position of the kernel at
the start of each round (when its evidence has roofline figures). Everything comes from the store.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from skillbase.errors import InputError
from skillbase.run.explain import explain_run
from skillbase.run.store import RunStore
from skillbase.run.types import Status
from skillbase.ui import figure_svg


def _round_points(report: dict) -> list[tuple[int, float]]:
    """Best verified speedup over the baseline after each round (1.0 until something is accepted)."""
    best = 1.0
    points = []
    for entry in report["rounds"]:
        for attempt in entry["attempts"]:
            if attempt["status"] == Status.ACCEPTED and attempt["runtime_us"] and report["baseline_us"]:
                best = max(best, report["baseline_us"] / attempt["runtime_us"])
        points.append((entry["round"], best))
    return points


def _roofline_points(store: RunStore, run_id: int) -> list[dict]:
    points = []
    for row in store.evidence_rows(run_id):
        try:
            document = json.loads(store.artifacts.get_text(row["document"]))
        except (InputError, ValueError):  # an unreadable evidence document leaves a gap in the plot
            continue
        roofline = document.get("roofline") if isinstance(document, dict) else None
        if roofline:
            points.append({"round": row["round_idx"], **roofline})
    return points


def _us(value) -> str:
    return f"{value:,.1f}" if isinstance(value, (int, float)) else "—"


def render_markdown(report: dict) -> str:
    lines = [f"# {report['run']}: {report['task']}", "",
             f"- task: `{report['task_path']}`", f"- status: {report['status']} ({report['stop_reason'] or '—'})",
             f"- baseline: {_us(report['baseline_us'])} µs; best: {_us(report['best_us'])} µs"
             + (f"; speedup {report['speedup']:.2f}x" if report["speedup"] else ""), ""]
    manifest = report["manifest"] or {}
    if manifest:
        lines += ["## Manifest", "", "| key | value |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in sorted(manifest.items()) if not isinstance(v, (dict, list))]
        lines.append("")
    lines += ["## Rounds", "", "| round | skill | outcome | best try | runtime (µs) | speedup | reason |",
              "|---|---|---|---|---|---|---|"]
    for entry in report["rounds"]:
        decision = entry["decision"] or {}
        accepted = [a for a in entry["attempts"] if a["status"] == Status.ACCEPTED]
        last = entry["attempts"][-1] if entry["attempts"] else None
        shown = min(accepted, key=lambda a: a["runtime_us"]) if accepted else last
        lines.append("| {r} | {s} | {o} | {t} | {u} | {x} | {why} |".format(
            r=entry["round"], s=decision.get("skill") or "—", o=entry["outcome"] or entry["status"],
            t=(shown["attempt"] + 1) if shown else "—",
            u=f"{shown['runtime_us']:.1f}" if shown and shown["runtime_us"] else "—",
            x=f"{shown['speedup']:.2f}x" if shown and shown["speedup"] else "—",
            # An attempt cut off mid-judgement (a killed run) has no reason yet.
            why=str((shown.get("reason") if shown else decision.get("reason")) or
                    (shown["status"] if shown else "—")).replace("|", "\\|")))
    return "\n".join(lines) + "\n"


def render_html(report: dict, roofline: list[dict]) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots = []
    points = _round_points(report)
    if points:
        fig, ax = plt.subplots(figsize=(6, 3.2))
        ax.step([p[0] for p in points], [p[1] for p in points], where="post", marker="o")
        ax.set_xlabel("round")
        ax.set_ylabel("best verified speedup (x)")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_title("speedup per round")
        plots.append(figure_svg(fig))
        plt.close(fig)
    usable = [p for p in roofline if p.get("arithmetic_intensity") and p.get("achieved_flops_per_s")]
    if usable:
        fig, ax = plt.subplots(figsize=(6, 3.6))
        peak_flops = next((p.get("peak_flops_per_s") for p in usable if p.get("peak_flops_per_s")), None)
        peak_bw = next((p.get("peak_dram_bytes_per_s") for p in usable if p.get("peak_dram_bytes_per_s")), None)
        xs = [p["arithmetic_intensity"] for p in usable]
        if peak_flops and peak_bw:
            lo, hi = min(xs + [peak_flops / peak_bw]) / 10, max(xs + [peak_flops / peak_bw]) * 10
            grid = [lo * (hi / lo) ** (i / 100) for i in range(101)]
            ax.plot(grid, [min(peak_flops, x * peak_bw) for x in grid], color="black", lw=1)
        ax.scatter(xs, [p["achieved_flops_per_s"] for p in usable], c=[p["round"] for p in usable], cmap="viridis")
        for p in usable:
            ax.annotate(f"r{p['round']}", (p["arithmetic_intensity"], p["achieved_flops_per_s"]), fontsize=8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP / DRAM byte)")
        ax.set_ylabel("FLOP/s")
        ax.set_title("roofline position per round")
        plots.append(figure_svg(fig))
        plt.close(fig)
    markdown = render_markdown(report)
    body = "".join(f"<figure>{svg}</figure>" for svg in plots)
    return ("<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
            "<style>body{{font-family:system-ui,sans-serif;max-width:960px;margin:2em auto}}"
            "pre{{background:#f6f6f6;padding:1em;overflow-x:auto}}figure{{margin:1em 0}}</style></head>"
            "<body><h1>{title}</h1>{plots}<pre>{md}</pre></body></html>").format(
        title=html.escape(f"{report['run']}: {report['task']}"), plots=body, md=html.escape(markdown))


def write_report(store: RunStore, ref: str | int, out_dir, force: bool = False) -> tuple[Path, Path]:
    report = explain_run(store, ref)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md_path, html_path = out / f"{report['run']}.md", out / f"{report['run']}.html"
    for path in (md_path, html_path):
        if path.exists() and not force:
            raise InputError(f"{path} already exists", hint="pass --force to overwrite it, or -o another folder")
    run = store.get_run(ref)
    md_path.write_text(render_markdown(report))
    html_path.write_text(render_html(report, _roofline_points(store, run.id)))
    return md_path, html_path
