"""Roofline position from ncu metrics: FLOPs, DRAM bytes, intensity, achieved and peak rates.

FLOPs follow ncu's own roofline: fadd + fmul + 2*ffma thread instructions (predicated on), fp32
and fp64 separately. ncu's roofline section collects them as `.sum.per_cycle_elapsed`; a
`--metrics` run may have the plain `.sum` counts. Peaks are `*.peak_sustained` (per cycle) times
the unit's cycles per second. Every field carries its unit in its name; a quantity the metrics
do not determine is left out.
"""

from __future__ import annotations

from typing import Any

DURATION = "gpu__time_duration.sum"
_OPS = {"fp32": ("fadd", "fmul", "ffma"), "fp64": ("dadd", "dmul", "dfma")}


def _elapsed_cycles(metrics: dict[str, float]) -> float | None:
    for name in ("smsp__cycles_elapsed.avg", "sm__cycles_elapsed.avg"):
        if name in metrics:
            return metrics[name]
    rate = metrics.get("smsp__cycles_elapsed.avg.per_second", metrics.get("sm__cycles_elapsed.avg.per_second"))
    duration = metrics.get(DURATION)
    if rate is not None and duration is not None:
        return rate * duration * 1e-9
    return None


def _inst(metrics: dict[str, float], op: str) -> float | None:
    """Thread instructions of OP over the whole kernel, from whichever form ncu collected."""
    for unit in ("smsp", "sm"):
        count = metrics.get(f"{unit}__sass_thread_inst_executed_op_{op}_pred_on.sum")
        if count is not None:
            return count
    per_cycle = metrics.get(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed")
    cycles = _elapsed_cycles(metrics)
    if per_cycle is not None and cycles is not None:
        return per_cycle * cycles
    return None


def flops(metrics: dict[str, float], precision: str) -> float | None:
    add, mul, fma = (_inst(metrics, op) for op in _OPS[precision])
    if add is None and mul is None and fma is None:
        return None
    return (add or 0.0) + (mul or 0.0) + 2.0 * (fma or 0.0)


def dram_bytes(metrics: dict[str, float]) -> float | None:
    if "dram__bytes.sum" in metrics:
        return metrics["dram__bytes.sum"]
    read, write = metrics.get("dram__bytes_read.sum"), metrics.get("dram__bytes_write.sum")
    if read is not None or write is not None:
        return (read or 0.0) + (write or 0.0)
    rate, duration = metrics.get("dram__bytes.sum.per_second"), metrics.get(DURATION)
    if rate is not None and duration is not None:
        return rate * duration * 1e-9
    return None


def device_peaks(metrics: dict[str, float]) -> dict[str, float | None]:
    """Peak DRAM bytes/s and FP32/FP64 FLOP/s of the device, when the peak metrics were collected."""
    sm_hz = metrics.get("sm__cycles_elapsed.avg.per_second", metrics.get("smsp__cycles_elapsed.avg.per_second"))
    dram_hz = metrics.get("dram__cycles_elapsed.avg.per_second")
    dram_peak = metrics.get("dram__bytes.sum.peak_sustained")
    out: dict[str, float | None] = {"peak_dram_bytes_per_s": None, "peak_fp32_flops_per_s": None,
                                    "peak_fp64_flops_per_s": None}
    if dram_peak is not None and dram_hz:
        out["peak_dram_bytes_per_s"] = dram_peak * dram_hz
    for precision, op in (("fp32", "ffma"), ("fp64", "dfma")):
        peak = metrics.get(f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum.peak_sustained")
        if peak is not None and sm_hz:
            out[f"peak_{precision}_flops_per_s"] = 2.0 * peak * sm_hz  # an FMA is two FLOPs
    return out


def roofline_for(metrics: dict[str, float]) -> dict[str, Any] | None:
    """The roofline block of the evidence for one kernel's metrics, or None when nothing is known."""
    duration_ns = metrics.get(DURATION)
    fp32, fp64 = flops(metrics, "fp32"), flops(metrics, "fp64")
    nbytes = dram_bytes(metrics)
    if fp32 is None and fp64 is None and nbytes is None:
        return None
    total = None if fp32 is None and fp64 is None else (fp32 or 0.0) + (fp64 or 0.0)
    out: dict[str, Any] = {"duration_ns": duration_ns, "fp32_flops": fp32, "fp64_flops": fp64,
                           "total_flops": total, "dram_bytes": nbytes}
    if total is not None and nbytes:
        out["arithmetic_intensity_flop_per_byte"] = total / nbytes
        out["arithmetic_intensity"] = out["arithmetic_intensity_flop_per_byte"]  # name read by report.py
    if duration_ns:
        seconds = duration_ns * 1e-9
        if total is not None:
            out["achieved_flops_per_s"] = total / seconds
        if nbytes is not None:
            out["achieved_dram_bytes_per_s"] = nbytes / seconds
    peaks = device_peaks(metrics)
    out.update({k: v for k, v in peaks.items() if v is not None})
    dominant = "fp64" if (fp64 or 0.0) > (fp32 or 0.0) else "fp32"
    peak_flops = peaks.get(f"peak_{dominant}_flops_per_s")
    peak_bw = peaks.get("peak_dram_bytes_per_s")
    if peak_flops and peak_bw:
        out["ridge_flop_per_byte"] = peak_flops / peak_bw
        # the fastest this kernel could run with its measured work at the device's roofs
        floor_s = max((total or 0.0) / peak_flops, (nbytes or 0.0) / peak_bw)
        out["floor_ns"] = floor_s * 1e9
    return {k: v for k, v in out.items() if v is not None}
