"""The bench suite (bench/ops/<operator>/): discovery of operators and implementations, and scores.

An operator folder holds `op.yaml` (metadata), a baseline task per dtype (`fp32.cu` + `fp32.task.yaml`,
`bf16.cu` + `bf16.task.yaml`), optional vendor implementations of the same task (`vendor_fp32.cu` +
`vendor_fp32.task.yaml`, whose spec names the libraries to link, the setup/teardown hooks and the
baseline kernel as its reference; op.yaml names the library for display), and optional
`best_<dtype>.cu` kernels found by optimization runs.

Scores are computed over per-size results (one `SizeResult` per operator, dtype, implementation and
preset). Only verified results carry a speedup; every other status is a failure and stays in every
denominator: a failed task is never dropped. Everything here is pure Python and unit-tested on CPU.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from skillbase.errors import InputError

__all__ = ["Implementation", "Operator", "SizeResult", "discover", "select", "bench_dir", "bucket_of",
           "weight_of", "scores", "gpu_slug", "save_results", "load_results", "merge_results",
           "render_markdown", "render_html", "BUCKETS", "GPU_PEAKS", "floor_us", "roofline_pct", "impl_kind"]

DTYPES = ("fp32", "bf16")
KINDS = ("baseline", "vendor", "best")

# Buckets by the task's data size (work model bytes): launch-bound, L2-resident, DRAM-bound.
LAUNCH_BOUND_BYTES = 1 << 20
L2_RESIDENT_BYTES = 50 << 20
BUCKETS = ("launch-bound", "l2-resident", "dram-bound")

VERIFIED = "verified"
# Statuses a result may carry; everything but `verified` is a failure.
STATUSES = (VERIFIED, "incorrect", "build-failed", "crashed", "timeout", "quarantined", "rejected-static",
            "error", "skipped")

DEFAULT_P = (0.0, 1.0, 1.5, 2.0)

# Peak rates for the roofline floor when the harness reports none (datasheet values, dense).
GPU_PEAKS = {
    "nvidia-h200": {"dram_bytes_per_s": 4.8e12, "fp32_flops_per_s": 67e12, "bf16_tensor_flops_per_s": 989e12},
    "nvidia-h100-80gb-hbm3": {"dram_bytes_per_s": 3.35e12, "fp32_flops_per_s": 67e12, "bf16_tensor_flops_per_s": 989e12},
    "nvidia-geforce-rtx-4090": {"dram_bytes_per_s": 1.008e12, "fp32_flops_per_s": 82.6e12, "bf16_tensor_flops_per_s": 165e12},
}
# Operators whose BF16 variant may use tensor cores: their compute floor uses the BF16 tensor peak.
TENSOR_CORE_OPS = frozenset({"matrix_mul", "square_matrix_mul", "matrix_power", "high_order_contraction",
                             "softmax_attention", "triangle_attention", "conv_2d", "matrix_vector_mul"})


def bench_dir() -> Path:
    """The suite's folder: $SKILLBASE_BENCH_DIR, else the suite shipped in the package."""
    from skillbase.config import bench_dir as configured

    return configured()


# -- discovery -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Implementation:
    op: str
    name: str                    # fp32 | bf16 | vendor_fp32 | best_bf16 ...
    kind: str                    # baseline | vendor | best
    dtype: str                   # fp32 | bf16
    cu_path: Path
    spec_path: Path              # the task spec that verifies and times it (its own, else the baseline's)
    baseline_path: Path          # the baseline kernel of the same op and dtype (speedups are against it)
    library: str | None = None   # vendor: cublas | cusparse | cufft | cub ... (op.yaml, for display)
    # From the implementation's task spec (the harness reads them from there too):
    link: tuple[str, ...] = ()   # libraries linked (spec `link:`)
    setup: str | None = None     # spec `hooks.setup`: extern "C" int setup(<the launcher's scalar args>), each size, untimed
    teardown: str | None = None  # spec `hooks.teardown`: extern "C" void teardown(void), when the session closes

    @property
    def task_id(self) -> str:
        return f"{self.op}/{self.dtype}"


@dataclass
class Operator:
    name: str
    category: str
    summary: str
    path: Path
    bf16: bool
    bf16_reason: str | None
    implementations: list[Implementation] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"name": self.name, "category": self.category, "summary": self.summary, "bf16": self.bf16,
                "bf16_reason": self.bf16_reason,
                "implementations": [{"name": i.name, "kind": i.kind, "dtype": i.dtype, "library": i.library,
                                     "path": str(i.cu_path)} for i in self.implementations]}


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise InputError(f"{path}: not valid YAML ({error})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping")
    return data


def discover(root: Path | None = None) -> list[Operator]:
    """Every operator under `root/ops` (sorted by name) with its implementations."""
    root = Path(root) if root else bench_dir()
    ops_dir = root / "ops"
    if not ops_dir.is_dir():
        raise InputError(f"{ops_dir}: no bench operators here", hint="set SKILLBASE_BENCH_DIR to the suite's folder")
    operators = []
    for folder in sorted(p for p in ops_dir.iterdir() if (p / "op.yaml").is_file()):
        meta = _read_yaml(folder / "op.yaml")
        bf16 = bool(meta.get("bf16", True))
        op = Operator(name=meta.get("name", folder.name), category=meta.get("category", "other"),
                      summary=meta.get("summary", ""), path=folder, bf16=bf16, bf16_reason=meta.get("bf16_reason"))
        vendors = meta.get("vendor") or {}
        for dtype in DTYPES:
            base_cu = folder / f"{dtype}.cu"
            if not base_cu.is_file():
                continue
            base_spec = folder / f"{dtype}.task.yaml"
            op.implementations.append(Implementation(op.name, dtype, "baseline", dtype, base_cu, base_spec, base_cu))
            vendor_name = f"vendor_{dtype}"
            vendor_cu = folder / f"{vendor_name}.cu"
            if vendor_cu.is_file():
                info = vendors.get(vendor_name) or {}
                spec = folder / f"{vendor_name}.task.yaml"
                if not spec.is_file():
                    raise InputError(f"{vendor_cu}: no task spec {spec.name} beside it",
                                     hint="a vendor implementation is its own task (link, hooks, allow, the "
                                          "baseline as reference): run bench/tools/generate.py")
                raw = _read_yaml(spec)
                hooks = raw.get("hooks") or {}
                op.implementations.append(Implementation(
                    op.name, vendor_name, "vendor", dtype, vendor_cu, spec, base_cu,
                    library=info.get("library"), link=tuple(raw.get("link") or ()), setup=hooks.get("setup"),
                    teardown=hooks.get("teardown")))
            best_cu = folder / f"best_{dtype}.cu"
            if best_cu.is_file():
                op.implementations.append(Implementation(op.name, f"best_{dtype}", "best", dtype, best_cu, base_spec, base_cu))
        operators.append(op)
    return operators


def select(operators: list[Operator], names=None, dtype: str | None = None, impl: str = "baseline") -> list[Implementation]:
    """The implementations to run: `impl` baseline | vendor | best (best falls back to the baseline)."""
    if impl not in KINDS:
        raise InputError(f"--impl {impl}: expected one of {', '.join(KINDS)}")
    by_name = {o.name: o for o in operators}
    if names:
        unknown = [n for n in names if n not in by_name]
        if unknown:
            import difflib

            close = difflib.get_close_matches(unknown[0], list(by_name), n=1)
            raise InputError(f"unknown operator {unknown[0]}", hint=f"did you mean {close[0]}?" if close else "see `skillbase bench list`")
        chosen = [by_name[n] for n in names]
    else:
        chosen = operators
    out = []
    for o in chosen:
        for d in DTYPES:
            if dtype and d != dtype:
                continue
            impls = [i for i in o.implementations if i.dtype == d]
            if impl == "best":
                pick = [i for i in impls if i.kind == "best"] or [i for i in impls if i.kind == "baseline"]
            else:
                pick = [i for i in impls if i.kind == impl]
            out.extend(pick[:1])
    return out


# -- results and scores ----------------------------------------------------------------------------

@dataclass
class SizeResult:
    """One operator, dtype, implementation and preset, as measured by the harness."""

    op: str
    dtype: str
    impl: str
    preset: str
    status: str                          # verified | incorrect | build-failed | crashed | timeout | quarantined | ...
    flops: float = 0.0
    bytes: float = 0.0
    runtime_us: float | None = None
    baseline_us: float | None = None
    spread: float | None = None
    floor_us: float | None = None        # roofline floor, when the harness measured peaks
    # False when the harness timed a batch of launches whose data stays in L2 (no DRAM floor
    # applies); None in results written before this was recorded.
    cold_l2: bool | None = None
    reason: str = ""
    # The CUDA_VISIBLE_DEVICES value of the worker that measured it: absolute runtimes differ by a
    # few percent between GPUs of one host (speedups do not: both sides run on the same GPU).
    device: str | None = None

    @property
    def verified(self) -> bool:
        return self.status == VERIFIED and self.runtime_us is not None and self.runtime_us > 0

    @property
    def speedup(self) -> float | None:
        """baseline_us / runtime_us for a verified result; None for every failure."""
        if not self.verified or not self.baseline_us:
            return None
        return self.baseline_us / self.runtime_us

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.op, self.dtype, self.impl, self.preset)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "SizeResult":
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


def bucket_of(data_bytes: float) -> str:
    """launch-bound (< 1 MiB of data), l2-resident (< 50 MiB), else dram-bound."""
    if data_bytes < LAUNCH_BOUND_BYTES:
        return "launch-bound"
    if data_bytes < L2_RESIDENT_BYTES:
        return "l2-resident"
    return "dram-bound"


def weight_of(flops: float, data_bytes: float) -> float:
    """Complexity weight of a task: log2 of its work (the larger of flops and bytes), at least 1.

    MSKernelBench weights by a per-operator "complexity" (N, M*N*K, nnz); raw work would let one
    4096^3 GEMM outweigh the rest of the suite, so the weight grows with the logarithm of the work.
    """
    work = max(float(flops or 0), float(data_bytes or 0), 2.0)
    return max(1.0, math.log2(work))


def floor_us(result: SizeResult, gpu: str | None) -> float | None:
    """The roofline floor of a task: max(bytes / DRAM bandwidth, flops / compute peak), in microseconds.

    A size the harness timed as a batch that stays in L2 has no DRAM floor (its data is legitimately
    served from L2): only its compute floor bounds it, and that says something only for a
    compute-bound task. For a memory-bound one no % of roofline is claimed (None) rather than a
    meaningless ~0 %.
    """
    peaks = GPU_PEAKS.get(gpu or "")
    dram_us = result.bytes / peaks["dram_bytes_per_s"] * 1e6 if peaks and result.bytes else None
    datasheet_compute_us = None
    if peaks and result.flops:
        compute = peaks["fp32_flops_per_s"]
        if result.dtype == "bf16" and result.op in TENSOR_CORE_OPS:
            compute = peaks["bf16_tensor_flops_per_s"]
        datasheet_compute_us = result.flops / compute * 1e6
    # Results written before cold_l2 was recorded: a harness floor far below the DRAM time of the
    # task's bytes is a flops-only floor, i.e. a warm batch.
    warm = result.cold_l2 is False or (result.cold_l2 is None and result.floor_us and dram_us
                                       and dram_us > 1.5 * result.floor_us)
    if warm:
        compute_us = result.floor_us or datasheet_compute_us
        if not compute_us or dram_us is None or dram_us > 1.5 * compute_us:
            return None
        return compute_us
    if result.floor_us:
        return result.floor_us
    if not peaks:
        return None
    seconds_us = max(dram_us or 0.0, datasheet_compute_us or 0.0)
    return seconds_us if seconds_us > 0 else None


def _geomean(values: list[float]) -> float | None:
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def scores(results: list[SizeResult], p_values=DEFAULT_P, gpu: str | None = None) -> dict:
    """The suite's scores over per-size results.

    - `weighted_speedup`: sum(w_i s_i) / sum(w_i) over all tasks, w_i = weight_of(task), s_i the
      speedup of a verified result and 0 for a failure (a failure counts, it is never dropped).
    - `fast_p[p]`: KernelBench's fast_p: the fraction of all tasks that are verified AND have a
      speedup greater than p (fast_0 is the fraction verified).
    - per bucket: tasks, verified, failed, `geomean_speedup` over the verified tasks of the bucket,
      `fast_1`, and `roofline_pct` (mean of floor / runtime over verified tasks with a known floor).
    """
    total = len(results)
    out: dict = {"tasks": total, "verified": sum(r.verified for r in results)}
    out["failed"] = total - out["verified"]
    weights = [weight_of(r.flops, r.bytes) for r in results]
    speedups = [r.speedup or 0.0 for r in results]
    out["weighted_speedup"] = (sum(w * s for w, s in zip(weights, speedups)) / sum(weights)) if total else None
    verified_speedups = [r.speedup for r in results if r.speedup is not None]
    out["geomean_speedup"] = _geomean(verified_speedups)
    out["fast_p"] = {_p_key(p): (sum(1 for r in results if r.speedup is not None and r.speedup > p) / total) if total else None
                     for p in p_values}
    out["roofline_pct"] = _roofline_pct(results, gpu)
    buckets = {}
    for name in BUCKETS:
        group = [r for r in results if bucket_of(r.bytes) == name]
        sp = [r.speedup for r in group if r.speedup is not None]
        buckets[name] = {
            "tasks": len(group), "verified": len(sp), "failed": len(group) - len(sp),
            "geomean_speedup": _geomean(sp),
            "fast_1": (sum(1 for s in sp if s > 1.0) / len(group)) if group else None,
            "roofline_pct": _roofline_pct(group, gpu),
        }
    out["buckets"] = buckets
    return out


def _p_key(p: float) -> str:
    return f"{p:g}"


def roofline_pct(result: SizeResult, gpu: str | None) -> float | None:
    """floor / runtime in percent for a verified result with a meaningful floor, else None."""
    if not result.verified:
        return None
    f = floor_us(result, gpu)
    return 100.0 * f / result.runtime_us if f else None


def _roofline_pct(results: list[SizeResult], gpu: str | None) -> float | None:
    pct = [p for p in (roofline_pct(r, gpu) for r in results) if p is not None]
    return sum(pct) / len(pct) if pct else None


# -- storage ---------------------------------------------------------------------------------------

def gpu_slug(name: str) -> str:
    """'NVIDIA H200' -> 'nvidia-h200': the folder under bench/results/ for one GPU model."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.strip().lower()).strip("-")
    if not slug:
        raise InputError(f"GPU name {name!r} gives an empty folder name")
    return slug


def results_dir(gpu: str, root: Path | None = None) -> Path:
    return (Path(root) if root else bench_dir()) / "results" / gpu_slug(gpu)


def load_results(path: Path) -> tuple[dict, list[SizeResult]]:
    """(metadata, results) from a results.json; a missing file is an empty result set."""
    path = Path(path)
    if not path.is_file():
        return {}, []
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    return data.get("meta", {}), [SizeResult.from_dict(r) for r in data.get("results", [])]


def merge_results(old: list[SizeResult], new: list[SizeResult]) -> list[SizeResult]:
    """New results replace old ones with the same (op, dtype, impl, preset); the rest are kept."""
    merged = {r.key: r for r in old}
    merged.update({r.key: r for r in new})
    return [merged[k] for k in sorted(merged)]


def save_results(gpu: str, new: list[SizeResult], meta: dict | None = None, root: Path | None = None) -> Path:
    """Merge `new` into bench/results/<gpu-slug>/results.json and rewrite its README.md."""
    folder = results_dir(gpu, root)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.json"
    old_meta, old = load_results(path)
    results = merge_results(old, new)
    meta = {**old_meta, **(meta or {}), "gpu": gpu, "updated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    path.write_text(json.dumps({"meta": meta, "results": [r.to_dict() for r in results]}, indent=1) + "\n")
    (folder / "README.md").write_text(render_markdown(meta, results))
    return path


# -- reports ---------------------------------------------------------------------------------------

def _fmt(v, digits=2, suffix="") -> str:
    if v is None:
        return "–"
    return f"{v:.{digits}f}{suffix}"


def impl_kind(result: SizeResult) -> str:
    """baseline | vendor | best: `fp32` / `bf16` are the baselines, `vendor_fp32` a vendor kernel..."""
    return "baseline" if result.impl in DTYPES else result.impl.split("_")[0]


def _groups(results: list[SizeResult]) -> dict[tuple[str, str], list[SizeResult]]:
    groups: dict[tuple[str, str], list[SizeResult]] = {}
    for r in results:
        groups.setdefault((impl_kind(r), r.dtype), []).append(r)
    return groups


def summary_rows(results: list[SizeResult], gpu: str | None) -> list[list[str]]:
    rows = []
    for (kind, dtype), group in sorted(_groups(results).items()):
        s = scores(group, gpu=gpu)
        b = s["buckets"]
        rows.append([kind, dtype, str(s["tasks"]), str(s["verified"]), _fmt(s["weighted_speedup"]),
                     _fmt(s["geomean_speedup"]), _fmt(s["fast_p"].get("1")), _fmt(s["fast_p"].get("1.5")),
                     _fmt(b["launch-bound"]["geomean_speedup"]), _fmt(b["l2-resident"]["geomean_speedup"]),
                     _fmt(b["dram-bound"]["geomean_speedup"]), _fmt(s["roofline_pct"], 1, "%")])
    return rows


SUMMARY_HEADER = ["impl", "dtype", "tasks", "verified", "weighted speedup", "geomean", "fast_1", "fast_1.5",
                  "launch-bound", "L2-resident", "DRAM-bound", "% of roofline"]
DETAIL_HEADER = ["operator", "dtype", "impl", "size", "bucket", "status", "runtime µs", "baseline µs", "spread",
                 "speedup", "% roofline"]


def detail_rows(results: list[SizeResult], gpu: str | None) -> list[list[str]]:
    rows = []
    for r in sorted(results, key=lambda r: r.key):
        pct = roofline_pct(r, gpu)
        rows.append([r.op, r.dtype, r.impl, r.preset, bucket_of(r.bytes), r.status, _fmt(r.runtime_us, 1),
                     _fmt(r.baseline_us, 1), _fmt(100 * r.spread if r.spread is not None else None, 1, "%"),
                     _fmt(r.speedup, 2, "x"), _fmt(pct, 1, "%")])
    return rows


def render_markdown(meta: dict, results: list[SizeResult]) -> str:
    gpu = gpu_slug(meta["gpu"]) if meta.get("gpu") else None
    lines = [f"# Bench results: {meta.get('gpu', 'unknown GPU')}", ""]
    if meta.get("updated"):
        lines += [f"Updated {meta['updated']}" + (f", skillbase {meta['skillbase']}" if meta.get("skillbase") else "")
                  + (f", git {meta['git']}" if meta.get("git") else "") + ".", ""]
    lines += ["Speedups are against the baseline kernel of the same operator and dtype; only verified results "
              "carry one, and failures stay in every denominator (see docs/bench.md).", ""]
    lines += _md_table(SUMMARY_HEADER, summary_rows(results, gpu)) + [""]
    lines += ["## Per size", ""] + _md_table(DETAIL_HEADER, detail_rows(results, gpu)) + [""]
    return "\n".join(lines)


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def render_html(meta: dict, results: list[SizeResult]) -> str:
    import html

    gpu = gpu_slug(meta["gpu"]) if meta.get("gpu") else None

    def table(header, rows):
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    from skillbase.bench.plots import roofline_share_svg, speedup_svg

    title = html.escape(f"Bench results: {meta.get('gpu', 'unknown GPU')}")
    plots = "".join(f"<figure>{svg}</figure>" for svg in (speedup_svg(results), roofline_share_svg(results, gpu))
                    if svg)
    style = ("body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}"
             "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}th{background:#f4f4f4}"
             "td:first-child,th:first-child{text-align:left}figure{margin:1em 0}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title><style>{style}</style></head>"
            f"<body><h1>{title}</h1><p>{html.escape(str(meta.get('updated', '')))}</p>"
            f"{table(SUMMARY_HEADER, summary_rows(results, gpu))}{plots}<h2>Per size</h2>"
            f"{table(DETAIL_HEADER, detail_rows(results, gpu))}</body></html>\n")
