"""The bench report's two plots (matplotlib, inline SVG), drawn from stored results alone.

- Speedup of each vendor or best implementation over its operator's baseline, one marker per size:
  where a library wins and at which sizes (launch-bound sizes often lose to the library's overhead).
- The share of the roofline floor each verified size reaches, per operator and implementation:
  how far the suite sits from the hardware. Sizes with no meaningful floor (timed warm in L2 and
  memory-bound, see `results.floor_us`) are left out, and the plot says how many.
"""

from __future__ import annotations

from skillbase.bench.results import SizeResult, impl_kind, roofline_pct
from skillbase.ui import figure_svg

PRESET_ORDER = ("xs", "s", "m", "l", "xl")
PRESET_COLOURS = {"xs": "#9ecae1", "s": "#6baed6", "m": "#3182bd", "l": "#08519c", "xl": "#08306b"}


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _preset_rank(preset: str) -> int:
    return PRESET_ORDER.index(preset) if preset in PRESET_ORDER else len(PRESET_ORDER)


def speedup_svg(results: list[SizeResult]) -> str | None:
    """Vendor / best speedup over the baseline per size; failures drawn as red crosses at the left."""
    others = [r for r in results if impl_kind(r) != "baseline"]
    if not others:
        return None
    plt = _plt()
    labels = sorted({f"{r.op} {r.dtype} {r.impl}" for r in others}, reverse=True)
    row = {label: i for i, label in enumerate(labels)}
    verified = [r for r in others if r.speedup]
    low = min([r.speedup for r in verified] + [1.0]) / 1.5
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.32 * len(labels)))
    for preset in sorted({r.preset for r in others}, key=_preset_rank):
        ok = [r for r in verified if r.preset == preset]
        ax.scatter([r.speedup for r in ok], [row[f"{r.op} {r.dtype} {r.impl}"] for r in ok], s=28,
                   color=PRESET_COLOURS.get(preset, "grey"), label=preset, zorder=3)
    failed = [r for r in others if not r.speedup]
    if failed:
        ax.scatter([low] * len(failed), [row[f"{r.op} {r.dtype} {r.impl}"] for r in failed], marker="x",
                   color="#d62728", label="failed", zorder=3)
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_xlabel("speedup over the baseline kernel (x, log scale; medians, timed interleaved)")
    ax.set_title("library and best implementations against the baseline, per size")
    ax.legend(fontsize=7, loc="lower right", title="size", title_fontsize=7)
    ax.grid(axis="x", which="both", lw=0.3, alpha=0.5)
    svg = figure_svg(fig)
    plt.close(fig)
    return svg


def roofline_share_svg(results: list[SizeResult], gpu: str | None) -> str | None:
    """% of the roofline floor of each verified size with a meaningful floor, per operator."""
    points = [(r, pct) for r, pct in ((r, roofline_pct(r, gpu)) for r in results) if pct is not None]
    if not points:
        return None
    left_out = sum(1 for r in results if r.verified) - len(points)
    plt = _plt()
    ops = sorted({r.op for r, _ in points}, reverse=True)
    row = {op: i for i, op in enumerate(ops)}
    series = sorted({(impl_kind(r), r.dtype) for r, _ in points})
    markers = {"fp32": "o", "bf16": "s"}
    colours = {"baseline": "#7f7f7f", "vendor": "#d62728", "best": "#2ca02c"}
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.2 * len(ops)))
    for i, (kind, dtype) in enumerate(series):
        mine = [(r, pct) for r, pct in points if r.dtype == dtype and impl_kind(r) == kind]
        offset = (i - (len(series) - 1) / 2) * 0.15     # side by side within an operator's row
        ax.scatter([pct for _, pct in mine], [row[r.op] + offset for r, _ in mine], s=14,
                   marker=markers.get(dtype, "^"), color=colours.get(kind, "#1f77b4"), alpha=0.8,
                   label=f"{kind} {dtype}", zorder=3)
    ax.set_xlim(0, 100)
    ax.set_yticks(range(len(ops)), ops, fontsize=7)
    ax.set_xlabel("% of the roofline floor (100 % = at the hardware's limit)")
    title = "how close each size runs to the roofline"
    if left_out:
        title += f"\n({left_out} verified sizes timed warm in L2 and memory-bound have no floor; not shown)"
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(axis="x", lw=0.3, alpha=0.5)
    svg = figure_svg(fig)
    plt.close(fig)
    return svg
