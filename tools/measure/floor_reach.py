"""What geomean speedup the FP32 runs of an optimize report would reach if each got to a share of its roofline floor.

    python tools/measure/floor_reach.py results/nvidia-h200/optimize/llm-run-2026-12-02/report.json [--dtype fp32]

Reads `skillbase bench optimize-report`'s JSON (each run's verified speedup over the naive baseline and
`floor_speedup`, the baseline time over the roofline floor's). A run keeps its own speedup where it is already
past the share; runs without a floor keep theirs. It says how far a geomean goal is from the kernels' own
bounds: a memory-bound naive kernel already at 60 % of DRAM bandwidth cannot gain more than 1.7x.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from skillbase.bench.results import geomean


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--dtype", default="fp32")
    parser.add_argument("--engine-off", action="store_true", help="the ablation's runs instead of the engine's")
    args = parser.parse_args()
    runs = [r for r in json.loads(args.report.read_text())["runs"]
            if r["dtype"] == args.dtype and bool(r["engine"]) != args.engine_off and r.get("speedup")]
    if not runs:
        raise SystemExit(f"error: no timed {args.dtype} runs in {args.report}")
    floors = [r["floor_speedup"] for r in runs if r.get("floor_speedup")]
    print(f"{len(runs)} {args.dtype} runs ({'engine off' if args.engine_off else 'engine on'}); "
          f"geomean speedup now {geomean([r['speedup'] for r in runs]):.2f}x; "
          f"the roofline floors' geomean {geomean(floors):.2f}x over {len(floors)} runs with a floor")
    for bound in (2.0, 2.5, 3.0):
        print(f"  runs whose floor is under {bound}x: {sum(f < bound for f in floors)}")
    for share in (0.3, 0.5, 0.7, 0.9):
        reached = [max(r["speedup"], share * r["floor_speedup"]) if r.get("floor_speedup") else r["speedup"]
                   for r in runs]
        print(f"  every run at >= {share:.0%} of its floor: geomean {geomean(reached):.2f}x")


if __name__ == "__main__":
    main()
