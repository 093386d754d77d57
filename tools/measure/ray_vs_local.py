"""The bench's FP32 baselines through the local executor and through Ray on this machine's GPU(s)
(a Ray instance started here, one GPU per job): the verdicts must be the same; both wall times are
printed (Ray's includes starting its instance). Issue 21; docs/ray.md.

    python tools/measure/ray_vs_local.py                              # 10 operators at presets s and l
    python tools/measure/ray_vs_local.py --ops relu,gelu --preset m --out results/nvidia-h200/ray

Exit 0 when every (operator, preset) has the same status under both executors, else 1 (each
difference printed). The results go to two temporary results folders, never to the real one; with
--out, a JSON record (wall times, statuses, medians) is written there as ray_vs_local.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from skillbase.bench.runner import run_bench

OPS = ("relu", "gelu", "softmax", "layer_norm", "rms_norm", "matrix_mul", "matrix_transpose", "reverse_array",
       "prefix_sum", "dot_product")


def timed(kind: str, ops: list[str], presets: list[str], folder: Path):
    start = time.perf_counter()
    def progress(result, done: int, total: int) -> None:   # a killed run still shows how far it got
        print(f"  [{kind} {done}/{total}] {result.op} {result.preset}: {result.status} "
              f"({time.perf_counter() - start:.0f} s)", flush=True)

    done = run_bench(ops, "fp32", "baseline", presets=presets, results=folder, executor_kind=kind, progress=progress)
    return time.perf_counter() - start, done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--preset", default="s,l", help="comma-separated presets (default: s,l)")
    parser.add_argument("--out", type=Path, default=None, help="write ray_vs_local.json into this folder")
    args = parser.parse_args()
    ops = [o for o in args.ops.split(",") if o]
    presets = [p for p in args.preset.split(",") if p]
    with tempfile.TemporaryDirectory(prefix="ray-vs-local-") as tmp:
        local_s, local = timed("local", ops, presets, Path(tmp) / "local")
        print(f"local executor: {len(local.results)} results in {local_s:.1f} s", flush=True)
        ray_s, ray = timed("ray", ops, presets, Path(tmp) / "ray")
        print(f"ray executor:   {len(ray.results)} results in {ray_s:.1f} s (GPU model {ray.gpu})", flush=True)
    by_key = {(r.op, r.preset): r for r in local.results}
    rows, differ = [], 0
    for r in ray.results:
        mine = by_key.get((r.op, r.preset))
        same = mine is not None and mine.status == r.status
        differ += not same
        rows.append({"op": r.op, "preset": r.preset, "local": mine.status if mine else None, "ray": r.status,
                     "local_us": mine.runtime_us if mine else None, "ray_us": r.runtime_us, "ray_device": r.device})
        ratio = f"{r.runtime_us / mine.runtime_us:.3f}" if mine and mine.runtime_us and r.runtime_us else "-"
        print(f"{'  ' if same else '!!'} {r.op:<18} {r.preset:<3} local {rows[-1]['local']:<10} ray {r.status:<10} "
              f"median ray/local {ratio}")
    missing = len(local.results) - len(ray.results)
    print(f"verdicts: {'identical' if not differ and not missing else f'{differ} differ, {missing} missing'} "
          f"({len(ray.results)} results); wall time local {local_s:.1f} s, ray {ray_s:.1f} s")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        record = {"gpu": ray.gpu, "ops": ops, "presets": presets, "local_wall_s": round(local_s, 2),
                  "ray_wall_s": round(ray_s, 2), "identical": not differ and not missing, "results": rows}
        (args.out / "ray_vs_local.json").write_text(json.dumps(record, indent=1) + "\n")
    return 0 if not differ and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
