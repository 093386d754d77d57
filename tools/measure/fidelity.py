"""Fidelity of the harness's timer, on a GPU. Prints a table and writes Markdown to --out.

    python tools/measure/fidelity.py --out results.md      # exit 0 and "PASS" when every target is met

Four questions, each with its target:
1. Does a copy kernel timed by the harness reach the device's measured copy bandwidth?
   (achieved / measured peak in 85-100%: the L2 flush and batching add no overhead
   that a bandwidth-bound kernel would see.)
2. Does the harness's figure (CUPTI activity records, harness.cupti) agree with ncu's
   gpu__time_duration for the same launch? (issue 16's target: within 2% on three kernels of
   different lengths, ~33 us, ~131 us, ~3 ms; the timer must be CUPTI, not the events fallback.)
   The difference is also shown in us: ncu's figure includes the front end's processing of the
   launch around the grid (0.5-2 us, docs/harness.md "Which figure"), so under 200 us, where the
   kernel's own noise is smaller than that, CUPTI must read below ncu by at most 2 us.
3. The CUDA events, against ncu on the same kernels: those of the CUPTI samples (the harness's
   cross-check) and those of a worker timed with events alone, where CUPTI never started (the
   clock before CUPTI: +8.1 % at 33 us on the H200). No target: shown so the cross-check's reach
   is known (docs/harness.md).
4. Is the timer stable? (IQR / median < 2% for kernels of 100 us or more.)

Everything runs through the public API (`skillbase.harness.runtime.evaluate`, `run_worker` under
ncu), so this measures exactly what `skillbase check` and the optimisation loop use.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]          # tools/measure/ -> the checkout
try:
    import skillbase  # noqa: F401 - the installed package when there is one (the GPU machine's /tmp/site)
except ImportError:
    sys.path.insert(0, str(REPO))

COPY_CU = r"""// Copy with 16-byte accesses and a grid-stride loop: as close to memcpy as a kernel gets.
#include <cuda_runtime.h>
__global__ void copy4(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) y[i] = x[i];
}
__global__ void copy_tail(const float* x, float* y, int start, int n) {
    int i = start + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
extern "C" void copy(const float* x, float* y, int n) {
    long long n4 = n / 4;
    if (n4) copy4<<<132 * 16, 256>>>((const float4*)x, (float4*)y, n4);
    if (n % 4) copy_tail<<<1, 32>>>(x, y, (int)(n4 * 4), n);
}
"""

COPY_SPEC = """launcher: copy
args:
  - {name: x, dtype: f32, shape: [n], role: in, init: {dist: uniform, low: -1, high: 1}}
  - {name: y, dtype: f32, shape: [n], role: out}
  - {name: n, dtype: i32, value: n}
sizes:
  presets: {s24: {n: 16777216}, s26: {n: 67108864}}
  scored: [s24, s26]
  irregular: {n: 1000003}
tolerance: {rtol: 0, atol_scale: 0}
work: {flops: 0, bytes: 8*n}
"""

SGEMM = REPO / "examples" / "naive_sgemm" / "naive_sgemm.cu"


BRACKET_US = 2.0        # ncu's launch processing around the grid: 0.5-2 us (docs/harness.md "Which figure")
BRACKET_BELOW_US = 200  # ... checked where the kernel's own run-to-run noise is smaller than that


def harness_time(task: Path, preset: str, timer: str = "auto", target_s: float = 1.0):
    from skillbase.harness.runtime import Options, evaluate

    result = evaluate(task, options=Options(verify=False, static=False, preset=preset,
                                            time_plan={"target_s": target_s, "min_samples": 30, "max_samples": 300,
                                                       "timer": timer}))
    if result.status != "ok":
        raise SystemExit(f"harness failed on {task.name} {preset}: {result.status}: {result.reason}")
    timing = result.timings[0]
    return timing, timing.kernels["candidate"], result.peaks


def ncu_time_us(task: Path, preset: str, calls: int = 5) -> float:
    """Median gpu__time_duration of the kernels of `calls` launcher calls (summed per call)."""
    from skillbase.harness.build import build
    from skillbase.harness.profile import ncu_path
    from skillbase.harness.runtime import run_worker
    from skillbase.task import load_task

    spec = load_task(task)
    library = build(task).library
    ncu = ncu_path()
    with tempfile.TemporaryDirectory(prefix="skillbase-fidelity-") as tmp:
        base = Path(tmp) / "run"
        wrapper = [ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--force-overwrite",
                   "--export", str(base)]
        job = {"kind": "run", "task": str(task), "candidate": {"library": str(library)},
               "run": {"sizes": spec.sizes_for(preset), "seed": 0, "calls": calls}}
        outcome = run_worker(job, timeout_s=600, wrapper=wrapper, plain=False)
        if outcome.result is None:
            raise SystemExit(f"ncu run failed: {outcome.diagnosis()[1]}\n{outcome.stderr_tail[-2000:]}")
        text = subprocess.run([ncu, "-i", str(base) + ".ncu-rep", "--csv", "--page", "raw", "--print-units", "base",
                               "--metrics", "gpu__time_duration.sum"], capture_output=True, text=True,
                              check=True).stdout
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    column = header.index("gpu__time_duration.sum")
    values = []
    for row in rows[1:]:
        cell = row[column].replace(",", "") if column < len(row) else ""
        try:
            values.append(float(cell))
        except ValueError:
            continue   # the units row
    if not values:
        raise SystemExit("ncu reported no gpu__time_duration")
    per_call = len(values) // calls or 1
    sums = [sum(values[i:i + per_call]) for i in range(0, per_call * calls, per_call)]
    return statistics.median(sums) / 1e3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Markdown file to write")
    args = parser.parse_args(argv)

    from skillbase.harness.env import gpu_name

    rows, checks = [], []
    with tempfile.TemporaryDirectory(prefix="skillbase-fidelity-task-") as tmp:
        copy_task = Path(tmp) / "copy.cu"
        copy_task.write_text(COPY_CU)
        (Path(tmp) / "copy.task.yaml").write_text(COPY_SPEC)
        cases = [("copy 2^24 f32", copy_task, "s24"), ("copy 2^26 f32", copy_task, "s26"),
                 ("naive sgemm 2048", SGEMM, "default")]
        peaks = {}
        for label, task, preset in cases:
            print(f"timing {label} ...", flush=True)
            timing, kernel, peaks = harness_time(task, preset)
            print(f"timing {label} with events alone ...", flush=True)
            _, alone, _ = harness_time(task, preset, timer="events", target_s=0.3)   # a reference: shorter
            print(f"profiling {label} with ncu ...", flush=True)
            ncu_us = ncu_time_us(task, preset)
            s = kernel.stats
            events_us = kernel.event_stats.median_us if kernel.event_stats else s.median_us
            rows.append({"kernel": label, "timer": timing.timer, "timer_note": timing.timer_note,
                         "median_us": s.median_us, "iqr_pct": 100 * s.rel_spread, "n": s.n,
                         "batch": kernel.batch, "ncu_us": ncu_us, "diff_us": s.median_us - ncu_us,
                         "diff_pct": 100 * (s.median_us - ncu_us) / ncu_us,
                         "events_us": events_us, "events_diff_pct": 100 * (events_us - ncu_us) / ncu_us,
                         "alone_us": alone.stats.median_us, "alone_batch": alone.batch,
                         "alone_diff_pct": 100 * (alone.stats.median_us - ncu_us) / ncu_us,
                         "gbps": (kernel.achieved_bytes_per_s or 0) / 1e9})
    copy_peak = peaks.get("copy_bytes_per_s", 0)
    big_copy = rows[1]
    bw_pct = 100 * big_copy["gbps"] * 1e9 / copy_peak if copy_peak else float("nan")
    checks.append(("copy bandwidth vs measured peak (2^26)", f"{bw_pct:.1f}%", 85 <= bw_pct <= 100.5))
    for r in rows:
        clock = r["timer"] + (f" ({r['timer_note']})" if r["timer_note"] else "")
        checks.append((f"timer is CUPTI: {r['kernel']}", clock, r["timer"] == "cupti"))
        checks.append((f"CUPTI vs ncu within 2%: {r['kernel']}", f"{r['diff_pct']:+.2f}%", abs(r["diff_pct"]) <= 2))
        if r["ncu_us"] < BRACKET_BELOW_US:
            checks.append((f"CUPTI inside ncu's launch bracket (-{BRACKET_US:g} us <= CUPTI - ncu < 0): {r['kernel']}",
                           f"{r['diff_us']:+.2f} us", -BRACKET_US <= r["diff_us"] < 0))
    for r in rows:
        if r["median_us"] >= 100:
            checks.append((f"IQR/median: {r['kernel']}", f"{r['iqr_pct']:.2f}%", r["iqr_pct"] < 2))

    lines = [f"# Timer fidelity on {gpu_name() or 'unknown GPU'}", "",
             f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, `python tools/measure/fidelity.py`; "
             f"measured copy peak {copy_peak / 1e12:.3f} TB/s, FP32 peak {peaks.get('fp32_flops_per_s', 0) / 1e12:.1f} "
             "TFLOP/s.", "",
             "| kernel | timer | harness (CUPTI) median us | IQR | samples x batch | ncu gpu__time_duration us | "
             "CUPTI - ncu us | CUPTI vs ncu | events, same samples, us | vs ncu | events alone us (batch) | vs ncu | "
             "GB/s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['kernel']} | {r['timer']} | {r['median_us']:.2f} | {r['iqr_pct']:.2f}% | "
                     f"{r['n']}x{r['batch']} | {r['ncu_us']:.2f} | {r['diff_us']:+.2f} | {r['diff_pct']:+.2f}% | "
                     f"{r['events_us']:.2f} | {r['events_diff_pct']:+.2f}% | "
                     f"{r['alone_us']:.2f} ({r['alone_batch']}) | {r['alone_diff_pct']:+.2f}% | {r['gbps']:.0f} |")
    lines += ["", "| check | value | target met |", "|---|---:|:---:|"]
    lines += [f"| {name} | {value} | {'yes' if ok else 'NO'} |" for name, value, ok in checks]
    passed = all(ok for _, _, ok in checks)
    lines += ["", "PASS: every target met" if passed else
              "FAIL: " + "; ".join(name for name, _, ok in checks if not ok)]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
