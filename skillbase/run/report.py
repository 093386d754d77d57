"""A run's report, from the store alone: Markdown, and a self-contained HTML page.

`run_report()` gathers it: `explain_run`'s replay of every round plus, from each round's evidence
document, the focus kernel's roofline position, the device's roofs and Nsight Compute's own guided
analysis. Both pages show the same tables: the run, its rounds, per round what skillbase proposed
beside what ncu's guided analysis says, and the manifest. The HTML page adds two plots (matplotlib,
inline SVG): the best verified speedup after each round, and the roofline (DRAM bandwidth, FP32 and
FP64 peaks as ncu measured them, the ridge point) with the kernel each round started from. A value
that was never measured reads "not measured" or "—", never None.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from skillbase.errors import InputError
from skillbase.evidence.model import Evidence
from skillbase.run.explain import explain_run
from skillbase.run.store import RunStore
from skillbase.run.types import Status
from skillbase.ui import figure_svg, html_page, html_table, markdown_table

__all__ = ["ADVICE_HEADER", "ROUND_HEADER", "advice_rows", "render_html", "render_markdown", "round_rows",
           "run_report", "summary_rows", "write_report"]

DASH = "—"
NOT_MEASURED = "not measured"
ROUND_HEADER = ["round", "skill", "outcome", "best try", "runtime (µs)", "speedup", "reason"]
ADVICE_HEADER = ["round", "kernel", "skillbase proposed (est. time saved)",
                 "Nsight Compute's guided analysis says (est. speedup)"]
SHOWN_PER_ROUND = 5      # candidates and ncu findings listed per round
# The ncu roofs the evidence holds (`evidence.roofline` / `evidence.device`), as ncu measured them.
ROOFS = (("peak_fp32_flops_per_s", "FP32 peak"), ("peak_fp64_flops_per_s", "FP64 peak"))


# ---- data ------------------------------------------------------------------------------------------


def run_report(store: RunStore, ref: str | int) -> dict[str, Any]:
    """`explain_run`'s replay plus `evidence`: per round with an evidence document, its focus
    kernel, roofline block, device facts and ncu's guided analysis (`Evidence.guided_analysis`)."""
    report = explain_run(store, ref)
    run = store.get_run(ref)
    by_round: dict[int, dict[str, Any]] = {}
    for row in store.evidence_rows(run.id):          # the last document of a round is the one decided on
        by_round[row["round_idx"]] = _round_evidence(store, row)
    report["evidence"] = [by_round[r] for r in sorted(by_round)]
    return report


def _round_evidence(store: RunStore, row) -> dict[str, Any]:
    entry: dict[str, Any] = {"round": row["round_idx"], "focus_kernel": None, "roofline": {}, "device": {},
                             "guided_analysis": [], "problem": None}
    try:
        evidence = Evidence.from_json(store.artifacts.get_text(row["document"]))
    except InputError as error:   # one unreadable document leaves a gap in one round, not a failed report
        entry["problem"] = f"evidence unreadable: {error.message}"
        return entry
    entry.update(focus_kernel=evidence.focus_kernel, roofline=dict(evidence.roofline or {}),
                 device=dict(evidence.device), guided_analysis=evidence.guided_analysis())
    return entry


def _peak(entry: dict[str, Any], key: str) -> float | None:
    value = entry["roofline"].get(key) or entry["device"].get(key)
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _best_per_round(report: dict) -> list[tuple[int, float, bool]]:
    """(round, best verified speedup over the baseline after it, whether it improved) per round."""
    best, out = 1.0, []
    baseline = report["baseline_us"]
    for entry in report["rounds"]:
        improved = False
        for attempt in entry["attempts"]:
            if attempt["status"] == Status.ACCEPTED and attempt["runtime_us"] and baseline:
                if baseline / attempt["runtime_us"] > best:
                    best, improved = baseline / attempt["runtime_us"], True
        out.append((entry["round"], best, improved))
    return out


# ---- cells -----------------------------------------------------------------------------------------


def _us(value: Any) -> str:
    return f"{value:,.1f}" if isinstance(value, (int, float)) else NOT_MEASURED


def _ratio(value: Any) -> str:
    return f"{value:.2f}x" if isinstance(value, (int, float)) and value else DASH


def _text(value: Any) -> str:
    if value is None or value == "":
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _shown_attempt(entry: dict) -> dict | None:
    """The attempt a round's row shows: its fastest accepted one, else its last."""
    accepted = [a for a in entry["attempts"] if a["status"] == Status.ACCEPTED and a["runtime_us"]]
    if accepted:
        return min(accepted, key=lambda a: a["runtime_us"])
    return entry["attempts"][-1] if entry["attempts"] else None


def summary_rows(report: dict) -> list[list[str]]:
    speedup = _ratio(report["speedup"]) if report["speedup"] else "none verified"
    return [["task", f"{report['task']} ({report['task_path']})"],
            ["status", report["status"] + (f" ({report['stop_reason']})" if report["stop_reason"] else "")],
            ["created", _text(report.get("created"))],
            ["baseline", _us(report["baseline_us"]) + (" µs" if report["baseline_us"] else "")],
            ["best", _us(report["best_us"]) + (" µs" if report["best_us"] else "")],
            ["speedup", speedup],
            ["rounds", str(len(report["rounds"]))]]


def round_rows(report: dict) -> list[list[str]]:
    rows = []
    for entry in report["rounds"]:
        decision = entry["decision"] or {}
        shown = _shown_attempt(entry)
        # An attempt cut off mid-judgement (a killed run) has no reason yet: its status says where it stopped.
        reason = (shown.get("reason") or shown["status"]) if shown else (decision.get("reason") or DASH)
        rows.append([str(entry["round"]), _text(decision.get("skill")), _text(entry["outcome"] or entry["status"]),
                     str(shown["attempt"] + 1) if shown else DASH,
                     _us(shown["runtime_us"]) if shown else NOT_MEASURED,
                     _ratio(shown["speedup"]) if shown else DASH, _text(reason)])
    return rows


def _estimate(candidate: dict) -> str:
    # the share of runtime a skill is expected to save (`time_saved_fraction`; `speedup` in older stores)
    share = candidate.get("time_saved_fraction", candidate.get("speedup"))
    return f" ({100 * share:.0f}%)" if isinstance(share, (int, float)) else ""


def _finding(finding: dict) -> str:
    estimate = finding.get("speedup_pct")
    where = f" {finding['speedup_type']}" if finding.get("speedup_type") else ""
    return (f"{finding['type']} {finding['summary']}"
            + (f" ({estimate:.0f}%{where})" if isinstance(estimate, (int, float)) else ""))


def advice_rows(report: dict) -> list[list[Any]]:
    """Per round: the skills skillbase ranked (the chosen one first in rank order, as decided) and the
    findings of ncu's guided analysis of the same kernel (errors, warnings and hints; not its notes)."""
    evidence = {e["round"]: e for e in report["evidence"]}
    rows = []
    for entry in report["rounds"]:
        decision = entry["decision"] or {}
        candidates = [f"{i}. {c.get('skill')}{_estimate(c)}" + (" ← chosen" if c.get("skill") == decision.get("skill")
                                                                  else "")
                      for i, c in enumerate((decision.get("candidates") or [])[:SHOWN_PER_ROUND], 1)]
        found = evidence.get(entry["round"])
        if found is None:
            ncu, kernel = ["no evidence stored for this round"], DASH
        elif found["problem"]:
            ncu, kernel = [found["problem"]], DASH
        else:
            kernel = _text(found["focus_kernel"])
            findings = [f for f in found["guided_analysis"] if f["type"] != "INF"]
            ncu = [_finding(f) for f in findings[:SHOWN_PER_ROUND]]
            if len(findings) > SHOWN_PER_ROUND:
                ncu.append(f"… {len(findings) - SHOWN_PER_ROUND} more")
            if not ncu:
                ncu = ["no findings (the evidence carries no ncu rule results: no profile, or a CSV "
                       "without --details)"] if not found["guided_analysis"] else ["only information, no finding"]
        rows.append([str(entry["round"]), kernel, candidates or ["no candidate"], ncu])
    return rows


def manifest_rows(report: dict) -> list[list[str]]:
    manifest = report["manifest"] or {}
    return [[key, _text(value)] for key, value in sorted(manifest.items()) if not isinstance(value, (dict, list))]


def roofline_rows(report: dict) -> list[list[str]]:
    """The numbers behind the roofline plot, per round: intensity, achieved rates, the floor."""
    rows = []
    for entry in report["evidence"]:
        roofline = entry["roofline"]
        intensity = roofline.get("arithmetic_intensity_flop_per_byte")
        flops = roofline.get("achieved_flops_per_s")
        bandwidth = roofline.get("achieved_dram_bytes_per_s")
        floor = roofline.get("floor_ns")
        duration = roofline.get("duration_ns")
        rows.append([str(entry["round"]), _text(entry["focus_kernel"]),
                     f"{intensity:.3g}" if isinstance(intensity, (int, float)) else NOT_MEASURED,
                     f"{flops / 1e12:.3g}" if isinstance(flops, (int, float)) else NOT_MEASURED,
                     f"{bandwidth / 1e12:.3g}" if isinstance(bandwidth, (int, float)) else NOT_MEASURED,
                     f"{100 * floor / duration:.1f}%" if floor and duration else NOT_MEASURED])
    return rows


ROOFLINE_HEADER = ["round", "kernel", "FLOP / DRAM byte", "achieved TFLOP/s", "achieved DRAM TB/s",
                   "% of its roofline floor"]


# ---- pages -----------------------------------------------------------------------------------------


def render_markdown(report: dict) -> str:
    lines = [f"# {report['run']}: {report['task']}", ""]
    lines += markdown_table(["", ""], summary_rows(report)) + [""]
    lines += ["## Rounds", ""] + markdown_table(ROUND_HEADER, round_rows(report)) + [""]
    lines += ["## Advice: skillbase beside Nsight Compute", ""] + markdown_table(ADVICE_HEADER, advice_rows(report))
    lines.append("")
    if report["evidence"]:
        lines += ["## Roofline", ""] + markdown_table(ROOFLINE_HEADER, roofline_rows(report)) + [""]
        lines += [f"- {note}" for note in _roofline_points(report)[1]]
        lines += [""] if lines[-1] != "" else []
    if report["manifest"]:
        lines += ["## Manifest", ""] + markdown_table(["key", "value"], manifest_rows(report)) + [""]
    return "\n".join(lines)


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def speedup_svg(report: dict) -> str | None:
    """The best verified speedup after each round; rounds on integer ticks, improving rounds marked."""
    points = _best_per_round(report)
    if not points:
        return None
    plt = _plt()
    rounds = [p[0] for p in points]
    fig, ax = plt.subplots(figsize=(6, 4.2))
    ax.step(rounds, [p[1] for p in points], where="post", color="#1f77b4", lw=1.5)
    ax.scatter(rounds, [p[1] for p in points], s=30, zorder=3,
               c=["#2ca02c" if p[2] else "#7f7f7f" for p in points])
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xticks(rounds if len(rounds) <= 30 else rounds[::max(1, len(rounds) // 15)])
    ax.set_xlim(min(rounds) - 0.5, max(rounds) + 0.5)
    top = max(p[1] for p in points)
    ax.set_ylim(0.9, max(1.1, top * 1.1))
    ax.set_xlabel("round")
    ax.set_ylabel("best verified speedup (x)")
    ax.set_title("best verified speedup after each round\n(green: that round improved it)", fontsize=9)
    ax.grid(axis="y", lw=0.3, alpha=0.5)
    svg = figure_svg(fig)
    plt.close(fig)
    return svg


def _roofline_points(report: dict) -> tuple[list[tuple[dict, float, float]], list[str]]:
    """(round entry, FLOP per DRAM byte, FLOP/s) of each round that has a place on the roofline, and
    a note for each round that has none (no FLOPs counted, no evidence), so nothing disappears silently."""
    notes, usable = [], []
    for entry in report["evidence"]:
        roofline = entry["roofline"]
        x, y = roofline.get("arithmetic_intensity_flop_per_byte"), roofline.get("achieved_flops_per_s")
        if entry["problem"]:
            notes.append(f"round {entry['round']}: {entry['problem']}")
        elif not roofline:
            notes.append(f"round {entry['round']}: no roofline figures (the evidence has no profile)")
        elif not x or not y:
            notes.append(f"round {entry['round']}: no FP32/FP64 FLOPs counted (a tensor-core or data-movement "
                         "kernel), so no point on a FLOP/s roofline")
        else:
            usable.append((entry, float(x), float(y)))
    return usable, notes


def roofline_svg(report: dict) -> tuple[str | None, list[str]]:
    """The roofline of the run's device with the kernel each round started from, and the notes of
    the rounds that are not on it."""
    entries = report["evidence"]
    usable, notes = _roofline_points(report)
    bandwidth = next((b for e in entries if (b := _peak(e, "peak_dram_bytes_per_s"))), None)
    roofs = [(label, p) for key, label in ROOFS if (p := next((v for e in entries if (v := _peak(e, key))), None))]
    if not usable and not (bandwidth and roofs):
        return None, notes
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    xs = [x for _, x, _ in usable]
    ridges = [peak / bandwidth for _, peak in roofs] if bandwidth else []
    lo = min(xs + ridges) / 20
    hi = max(xs + ridges) * 20
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    if bandwidth:
        ax.plot(grid, [x * bandwidth for x in grid], color="black", lw=0.8, ls=":",
                label=f"DRAM {bandwidth / 1e12:.2f} TB/s")
    styles = ("-", "--")
    for (label, peak), style in zip(roofs, styles, strict=False):
        roof = [min(peak, x * bandwidth) if bandwidth else peak for x in grid]
        ax.plot(grid, roof, color="black", lw=1.4 if style == "-" else 1.0, ls=style,
                label=f"{label} {peak / 1e12:.1f} TFLOP/s")
    if bandwidth and roofs:
        label, peak = roofs[0]
        ridge = peak / bandwidth
        ax.scatter([ridge], [peak], marker="D", s=36, color="black", zorder=4)
        ax.annotate(f"ridge {ridge:.1f} FLOP/B", (ridge, peak), textcoords="offset points", xytext=(-4, 8),
                    fontsize=8)
    colours = plt.get_cmap("viridis")
    last = max((e["round"] for e, _, _ in usable), default=0) or 1
    for entry, x, y in usable:
        ax.scatter([x], [y], s=48, color=colours(entry["round"] / last), edgecolor="black", zorder=5)
        ax.annotate(f"r{entry['round']} {entry['focus_kernel'] or ''}".strip(), (x, y), textcoords="offset points",
                    xytext=(6, 4), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte, log scale)")
    ax.set_ylabel("FLOP/s (log scale)")
    ax.set_title("roofline (ncu's measured peaks) and the kernel each round started from", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(which="major", lw=0.3, alpha=0.5)
    svg = figure_svg(fig)
    plt.close(fig)
    return svg, notes


def render_html(report: dict) -> str:
    import html

    parts = [html_table(None, summary_rows(report), "summary")]
    speedup = speedup_svg(report)
    roofline, notes = roofline_svg(report)
    figures = "".join(f"<figure>{svg}</figure>" for svg in (speedup, roofline) if svg)
    if figures:
        parts.append(f"<div class='plots'>{figures}</div>")
    if notes:
        parts.append("<ul class='notes'>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    parts.append("<h2>Rounds</h2>" + html_table(ROUND_HEADER, round_rows(report), "rounds"))
    parts.append("<h2>Advice: skillbase beside Nsight Compute</h2>"
                 "<p>What skillbase's rules proposed for the kernel each round started from, and what ncu's own "
                 "guided analysis said about the same profile (OPT: an optimisation hint, WRN: a warning; "
                 "ncu's estimate of the speedup, local to a unit or global).</p>"
                 + html_table(ADVICE_HEADER, advice_rows(report), "advice"))
    if report["evidence"]:
        parts.append("<h2>Roofline</h2>" + html_table(ROOFLINE_HEADER, roofline_rows(report), "roofline"))
    if report["manifest"]:
        parts.append("<h2>Manifest</h2>" + html_table(["key", "value"], manifest_rows(report), "manifest"))
    # words left, numbers right: the rounds' timings and the roofline's figures
    style = ("body{max-width:1200px}td,th{text-align:left}"
             "table.rounds td:nth-child(n+4):nth-child(-n+6),table.rounds th:nth-child(n+4):nth-child(-n+6),"
             "table.roofline td:nth-child(n+3),table.roofline th:nth-child(n+3){text-align:right}"
             "table.summary td:first-child{font-weight:600}"
             ".plots{display:flex;flex-wrap:wrap;gap:1em}.plots svg{max-width:100%;height:auto}.notes{color:#555}")
    return html_page(f"{report['run']}: {report['task']}", "".join(parts), style)


class WrittenReport(NamedTuple):
    """The two pages `write_report` wrote (`report --json` prints `to_json()`)."""

    markdown: Path
    html: Path

    def to_json(self) -> dict[str, Any]:
        from skillbase.documents import versioned

        return versioned("report", {"run": self.markdown.stem, "markdown": str(self.markdown),
                                    "html": str(self.html)})


def write_report(store: RunStore, ref: str | int, out_dir, force: bool = False) -> WrittenReport:
    """RUN.md and RUN.html in OUT_DIR; existing files are kept unless FORCE."""
    report = run_report(store, ref)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md_path, html_path = out / f"{report['run']}.md", out / f"{report['run']}.html"
    for path in (md_path, html_path):
        if path.exists() and not force:
            raise InputError(f"{path} already exists", hint="pass --force to overwrite it, or -o another folder")
    md_path.write_text(render_markdown(report))
    html_path.write_text(render_html(report))
    return WrittenReport(md_path, html_path)
