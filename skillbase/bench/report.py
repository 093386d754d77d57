"""The bench report: the score tables of results as Markdown (the README.md beside each
results.json, rewritten by `save_results`) and as a self-contained HTML page with two inline plots
(`skillbase.bench.plots`).
"""

from __future__ import annotations

import datetime as _dt
import html
import json
from dataclasses import dataclass
from pathlib import Path

from skillbase.bench.plots import roofline_share_svg, speedup_svg
from skillbase.bench.results import (
    SizeResult,
    against,
    bucket_of,
    gpu_slug,
    impl_kind,
    load_results,
    merge_results,
    references_of,
    results_dir,
    roofline_pct,
    scores,
    speedup_against,
)
from skillbase.documents import versioned
from skillbase.errors import InputError
from skillbase.ui import html_page, html_table, markdown_table

__all__ = ["DETAIL_HEADER", "REFERENCE_HEADER", "SUMMARY_HEADER", "StoredScores", "detail_rows", "number",
           "reference_rows", "render_html", "render_markdown", "save_results", "summary_rows"]

SUMMARY_HEADER = ["impl", "dtype", "tasks", "verified", "weighted speedup", "geomean", "fast_1", "fast_1.5",
                  "launch-bound", "L2-resident", "DRAM-bound", "% of roofline"]
# The references an implementation is compared with, beside the baseline, and their column titles.
COMPARED = (("vendor", "vendor"), ("torch", "torch"), ("torch_compile", "torch.compile"))
DETAIL_HEADER = ["operator", "dtype", "impl", "library", "size", "bucket", "status", "runtime µs", "baseline µs",
                 "spread", "speedup", *(f"vs {title}" for _, title in COMPARED), "% roofline"]
REFERENCE_HEADER = ["operator", "dtype", "size", "baseline µs", "vendor", "vendor µs", "torch µs", "torch.compile µs",
                    "best µs"]


def number(value: float | None, digits: int = 2, suffix: str = "") -> str:
    """A score or timing for a table cell: fixed digits, '–' when not measured."""
    if value is None:
        return "–"
    return f"{value:.{digits}f}{suffix}"


def _groups(results: list[SizeResult]) -> dict[tuple[str, str], list[SizeResult]]:
    groups: dict[tuple[str, str], list[SizeResult]] = {}
    for r in results:
        groups.setdefault((impl_kind(r), r.dtype), []).append(r)
    return groups


def summary_rows(results: list[SizeResult], gpu: str | None, reference: str = "baseline") -> list[list[str]]:
    """One row per (implementation kind, dtype): the suite's scores and the per-bucket geomeans, every
    speedup against `reference` (baseline | vendor | torch | torch_compile; see results.against)."""
    rows = []
    for (kind, dtype), group in sorted(_groups(against(results, reference)[0]).items()):
        s = scores(group, gpu=gpu)
        b = s["buckets"]
        rows.append([kind, dtype, str(s["tasks"]), str(s["verified"]), number(s["weighted_speedup"]),
                     number(s["geomean_speedup"]), number(s["fast_p"].get("1")), number(s["fast_p"].get("1.5")),
                     number(b["launch-bound"]["geomean_speedup"]), number(b["l2-resident"]["geomean_speedup"]),
                     number(b["dram-bound"]["geomean_speedup"]), number(s["roofline_pct"], 1, "%")])
    return rows


def detail_rows(results: list[SizeResult], gpu: str | None) -> list[list[str]]:
    """One row per size result: its speedup over the baseline and against each other reference at
    the same size (a ratio of speedups, see results.speedup_against)."""
    refs = references_of(results)
    rows = []
    for r in sorted(results, key=lambda r: r.key):
        pct = roofline_pct(r, gpu)
        versus = [number(speedup_against(r, refs.get((kind, r.op, r.dtype, r.preset))), 2, "x")
                  if impl_kind(r) != kind else "" for kind, _ in COMPARED]
        rows.append([r.op, r.dtype, r.impl, r.library or "", r.preset, bucket_of(r.bytes), r.status,
                     number(r.runtime_us, 1), number(r.baseline_us, 1),
                     number(100 * r.spread if r.spread is not None else None, 1, "%"), number(r.speedup, 2, "x"),
                     *versus, number(pct, 1, "%")])
    return rows


def reference_rows(results: list[SizeResult]) -> list[list[str]]:
    """One row per operator, dtype and size: the runtime of its baseline, vendor (with the library),
    PyTorch eager, torch.compile and best kernel, where measured and verified. Each comes from its own
    evaluation: compare speedups (detail_rows) rather than these absolute times across columns."""
    by_size: dict[tuple[str, str, str], dict[str, SizeResult]] = {}
    for r in results:
        by_size.setdefault((r.op, r.dtype, r.preset), {})[impl_kind(r)] = r
    rows = []
    for (op, dtype, preset), impls in sorted(by_size.items()):
        if set(impls) == {"baseline"}:
            continue
        vendor = impls.get("vendor")
        rows.append([op, dtype, preset, _runtime(impls.get("baseline")), (vendor.library or "") if vendor else "",
                     *(_runtime(impls.get(kind)) for kind in ("vendor", "torch", "torch_compile", "best"))])
    return rows


def _runtime(result: SizeResult | None) -> str:
    """A reference table cell: the runtime when verified, else the status (empty when not measured)."""
    if result is None:
        return ""
    return number(result.runtime_us, 1) if result.verified else result.status


def _against_text(results: list[SizeResult], reference: str) -> str:
    if reference == "baseline":
        return ("Speedups are against the baseline kernel of the same operator and dtype; only verified results "
                "carry one, and failures stay in every denominator (see docs/bench.md).")
    unmatched = against(results, reference)[1]
    return (f"The summary's speedups are against {reference} at the same operator, dtype and size (the ratio of "
            f"the two speedups over the baseline, each timed interleaved with it); {reference}'s own results are "
            f"left out, failures stay in every denominator" + (f", and {unmatched} results with no verified "
                                                               f"{reference} at their size are not scored"
                                                               if unmatched else "") + " (see docs/bench.md).")


def render_markdown(meta: dict, results: list[SizeResult], reference: str = "baseline") -> str:
    gpu = gpu_slug(meta["gpu"]) if meta.get("gpu") else None
    lines = [f"# Bench results: {meta.get('gpu', 'unknown GPU')}", ""]
    if meta.get("updated"):
        lines += [f"Updated {meta['updated']}" + (f", skillbase {meta['skillbase']}" if meta.get("skillbase") else "")
                  + (f", git {meta['git']}" if meta.get("git") else "") + ".", ""]
    lines += [_against_text(results, reference), ""]
    lines += markdown_table(SUMMARY_HEADER, summary_rows(results, gpu, reference)) + [""]
    references = reference_rows(results)
    if references:
        lines += ["## Vendor libraries and PyTorch", ""] + markdown_table(REFERENCE_HEADER, references) + [""]
    lines += ["## Per size", ""] + markdown_table(DETAIL_HEADER, detail_rows(results, gpu)) + [""]
    return "\n".join(lines)


def save_results(gpu: str, new: list[SizeResult], meta: dict | None = None, root: str | Path | None = None) -> Path:
    """Merge `new` into `<root>/<gpu-slug>/bench/results.json` and rewrite the README.md beside it;
    the results.json written. `root` defaults to `skillbase.config.bench_results_root()`."""
    folder = results_dir(gpu, root)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.json"
    old_meta, old = load_results(path)
    results = merge_results(old, new)
    meta = {**old_meta, **(meta or {}), "gpu": gpu,
            "updated": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")}
    path.write_text(json.dumps({"meta": meta, "results": [r.to_dict() for r in results]}, indent=1) + "\n")
    (folder / "README.md").write_text(render_markdown(meta, results))
    return path


def render_html(meta: dict, results: list[SizeResult], reference: str = "baseline") -> str:
    gpu = gpu_slug(meta["gpu"]) if meta.get("gpu") else None
    plots = "".join(f"<figure>{svg}</figure>" for svg in (speedup_svg(results), roofline_share_svg(results, gpu))
                    if svg)
    references = reference_rows(results)
    return html_page(f"Bench results: {meta.get('gpu', 'unknown GPU')}",
                     f"<p>{html.escape(str(meta.get('updated', '')))}</p>"
                     f"<p>{html.escape(_against_text(results, reference))}</p>"
                     f"{html_table(SUMMARY_HEADER, summary_rows(results, gpu, reference))}{plots}"
                     + (f"<h2>Vendor libraries and PyTorch</h2>{html_table(REFERENCE_HEADER, references)}"
                        if references else "")
                     + f"<h2>Per size</h2>{html_table(DETAIL_HEADER, detail_rows(results, gpu))}")


@dataclass(frozen=True)
class StoredScores:
    """The scores of each GPU's stored results (`bench report`), their speedups against `reference`."""

    stored: dict[str, tuple[dict, list[SizeResult]]]    # gpu slug -> (metadata, results): `load_stored`
    reference: str = "baseline"

    def to_json(self) -> dict:
        """`bench report --json`: the document `bench-report`, the scores of each GPU by its slug."""
        gpus = {slug: scores(against(results, self.reference)[0], gpu=gpu_slug(meta["gpu"]))
                for slug, (meta, results) in self.stored.items()}
        return versioned("bench-report", {"gpus": gpus})


def html_targets(html_path: Path, slugs: list[str], force: bool = False) -> dict[str, Path]:
    """The HTML page of each GPU (`bench report --html`; one file per GPU when several), checked before
    anything is written: an existing file is refused without `force`, never overwritten unasked."""
    one = len(slugs) == 1
    targets = {slug: html_path if one else html_path.with_name(f"{html_path.stem}-{slug}{html_path.suffix}")
               for slug in slugs}
    existing = [target for target in targets.values() if target.exists()]
    if existing and not force:
        raise InputError(f"{existing[0]} already exists", hint="pass --force to overwrite it, or --html another file")
    return targets
