"""Bench results: one `SizeResult` per operator, dtype, implementation and preset; scores; storage.

Scores are computed over per-size results. Only verified results carry a speedup; every other
status is a failure and stays in every denominator: a failed task is never dropped. Results are
stored per GPU model in `<results>/<gpu-slug>/bench/results.json` (the results root is
`--results`, else `skillbase.config.bench_results_root()`: never inside the installed package);
`skillbase.bench.report.save_results` writes them with the README.md beside them.
Everything here is pure Python and unit-tested on CPU.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from skillbase import config
from skillbase.bench.suite import DTYPES, REFERENCES
from skillbase.errors import InputError

__all__ = ["BUCKETS", "GPU_PEAKS", "STATUSES", "VERIFIED", "SizeResult", "against", "bucket_of", "datasheet_floors",
           "floor_us", "gpu_slug", "impl_kind", "load_results", "load_stored", "merge_results", "references_of",
           "results_dir", "roofline_pct", "scores", "speedup_against", "weight_of"]

# Buckets by the task's data size (work model bytes): launch-bound, L2-resident, DRAM-bound.
LAUNCH_BOUND_BYTES = 1 << 20
L2_RESIDENT_BYTES = 50 << 20
BUCKETS = ("launch-bound", "l2-resident", "dram-bound")

VERIFIED = "verified"
# Statuses a result may carry; everything but `verified` is a failure.
STATUSES = (VERIFIED, "incorrect", "build-failed", "crashed", "timeout", "quarantined", "rejected-static",
            "error", "skipped")

DEFAULT_P = (0.0, 1.0, 1.5, 2.0)

# Peak rates for the roofline floor when the harness reports none (datasheet values, dense), and the
# SM count the coder prompts state (a grid's waves).
GPU_PEAKS = {
    "nvidia-h200": {"dram_bytes_per_s": 4.8e12, "fp32_flops_per_s": 67e12,
                    "bf16_tensor_flops_per_s": 989e12, "sm_count": 132},
    "nvidia-h100-80gb-hbm3": {"dram_bytes_per_s": 3.35e12, "fp32_flops_per_s": 67e12,
                              "bf16_tensor_flops_per_s": 989e12, "sm_count": 132},
    "nvidia-geforce-rtx-4090": {"dram_bytes_per_s": 1.008e12, "fp32_flops_per_s": 82.6e12,
                                "bf16_tensor_flops_per_s": 165e12, "sm_count": 128},
}
# Operators whose BF16 variant may use tensor cores: their compute floor uses the BF16 tensor peak.
TENSOR_CORE_OPS = frozenset({"matrix_mul", "square_matrix_mul", "matrix_power", "high_order_contraction",
                             "softmax_attention", "triangle_attention", "conv_2d", "matrix_vector_mul"})


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
    # The library of a vendor implementation (cublas, cudnn, ...) or torch; None for kernels of ours.
    library: str | None = None
    # Where the job's wall time went (the harness's phases: compile, inputs, reference, verify, timing, ...),
    # on the last size a job measured only: one job verifies at every size and times all its presets.
    phases_s: dict[str, float] | None = None

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
        data = asdict(self)
        if data["phases_s"] is None:     # the other sizes of a job, and results written before it was recorded
            del data["phases_s"]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> SizeResult:
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
    dram_us, datasheet_compute_us = datasheet_floors(result, gpu)
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


def datasheet_floors(result: SizeResult, gpu: str | None) -> tuple[float | None, float | None]:
    """(memory, compute) floors in microseconds from the GPU's datasheet peaks: bytes / DRAM bandwidth and
    flops / the FP32 peak (the BF16 tensor peak for a BF16 tensor-core operator); None where the work
    model or the GPU gives none."""
    peaks = GPU_PEAKS.get(gpu or "")
    if not peaks:
        return None, None
    dram_us = result.bytes / peaks["dram_bytes_per_s"] * 1e6 if result.bytes else None
    compute_us = None
    if result.flops:
        compute = peaks["fp32_flops_per_s"]
        if result.dtype == "bf16" and result.op in TENSOR_CORE_OPS:
            compute = peaks["bf16_tensor_flops_per_s"]
        compute_us = result.flops / compute * 1e6
    return dram_us, compute_us


def geomean(values: Iterable[float | None]) -> float | None:
    """The geometric mean of the values that were measured (None: not measured, left out); None for none."""
    values = [v for v in values if v is not None]
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
    weighted = sum(w * s for w, s in zip(weights, speedups, strict=True))
    out["weighted_speedup"] = weighted / sum(weights) if total else None
    verified_speedups = [r.speedup for r in results if r.speedup is not None]
    out["geomean_speedup"] = geomean(verified_speedups)
    out["fast_p"] = {_p_key(p): (sum(1 for r in results if r.speedup is not None and r.speedup > p) / total)
                     if total else None for p in p_values}
    out["roofline_pct"] = _roofline_pct(results, gpu)
    buckets = {}
    for name in BUCKETS:
        group = [r for r in results if bucket_of(r.bytes) == name]
        sp = [r.speedup for r in group if r.speedup is not None]
        buckets[name] = {
            "tasks": len(group), "verified": len(sp), "failed": len(group) - len(sp),
            "geomean_speedup": geomean(sp),
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
    """'NVIDIA H200' -> 'nvidia-h200': the folder of one GPU model under the results root."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.strip().lower()).strip("-")
    if not slug:
        raise InputError(f"GPU name {name!r} gives an empty folder name")
    return slug


def results_dir(gpu: str, root: str | Path | None = None) -> Path:
    """`<root>/<gpu-slug>/bench/`: results.json and README.md of one GPU model."""
    return config.bench_results_root(root) / gpu_slug(gpu) / "bench"


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


def load_stored(root: str | Path | None = None, gpu: str | None = None) -> dict[str, tuple[dict, list[SizeResult]]]:
    """{gpu-slug: (metadata, results)} of every GPU under the results root (only `gpu` when given);
    InputError, saying how to get some, when there are none."""
    root = config.bench_results_root(root)
    if gpu:
        paths = [results_dir(gpu, root) / "results.json"]
    else:
        paths = sorted(p / "bench" / "results.json" for p in root.glob("*") if (p / "bench" / "results.json").is_file())
    if not paths or not all(p.is_file() for p in paths):
        raise InputError(f"no bench results under {root}" + (f" for {gpu}" if gpu else ""),
                         hint="run `skillbase bench run` on a GPU machine first (or pass --results DIR)")
    stored = {}
    for path in paths:
        slug = path.parent.parent.name
        meta, results = load_results(path)
        meta.setdefault("gpu", slug)
        stored[slug] = (meta, results)
    return stored


def merge_results(old: list[SizeResult], new: list[SizeResult]) -> list[SizeResult]:
    """New results replace old ones with the same (op, dtype, impl, preset); the rest are kept."""
    merged = {r.key: r for r in old}
    merged.update({r.key: r for r in new})
    return [merged[k] for k in sorted(merged)]


def impl_kind(result: SizeResult) -> str:
    """baseline | vendor | best | torch | torch_compile: `fp32` / `bf16` are the baselines, `vendor_fp32` a
    vendor kernel, `torch_compile_bf16` the PyTorch implementation through torch.compile..."""
    return "baseline" if result.impl in DTYPES else result.impl.rsplit("_", 1)[0]


def speedup_against(result: SizeResult, reference: SizeResult | None) -> float | None:
    """How much faster `result` is than `reference` (the same operator, dtype and size, another
    implementation): the ratio of their speedups over the baseline. Each speedup was timed interleaved
    with the baseline in its own evaluation, so the ratio cancels the drift between evaluations (and
    GPUs) that a ratio of absolute runtimes would carry. None unless both are verified."""
    if reference is None or result.speedup is None or reference.speedup is None:
        return None
    return result.speedup / reference.speedup


def references_of(results: list[SizeResult]) -> dict[tuple[str, str, str, str], SizeResult]:
    """{(reference kind, op, dtype, preset): result} of every result that can serve as a reference
    (`skillbase.bench.suite.REFERENCES`: baseline, vendor, torch, torch_compile)."""
    return {(impl_kind(r), r.op, r.dtype, r.preset): r for r in results if impl_kind(r) in REFERENCES}


def against(results: list[SizeResult], reference: str) -> tuple[list[SizeResult], int]:
    """The results restated against another reference than the baseline, for the scores.

    Each result's `baseline_us` becomes the time the reference would take in the result's own
    evaluation (reference runtime x this baseline / the reference's baseline), so `speedup` and every
    score are against `reference`. The reference's own results are left out, and so are the results
    whose size has no verified reference (their number is returned: they cannot be scored against
    it); the result's own failures still count as failures. `reference` baseline returns them as
    they are."""
    if reference not in REFERENCES:
        raise InputError(f"--against {reference}: expected one of {', '.join(REFERENCES)}")
    if reference == "baseline":
        return list(results), 0
    refs = references_of(results)
    out, unmatched = [], 0
    for r in results:
        if impl_kind(r) in (reference, "baseline"):
            continue
        ref = refs.get((reference, r.op, r.dtype, r.preset))
        if ref is None or ref.speedup is None:
            unmatched += 1
            continue
        restated = SizeResult.from_dict(r.to_dict())
        if r.baseline_us:
            restated.baseline_us = ref.runtime_us * r.baseline_us / ref.baseline_us
        out.append(restated)
    return out, unmatched
