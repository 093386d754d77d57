"""The bench's FP32 baselines through the local executor and through Ray on this machine's GPU(s)
(a Ray instance started here, one GPU per job): the verdicts must be the same; both wall times are
printed (Ray's includes starting its instance). Issue 21; docs/ray.md.

    python tools/measure/ray_vs_local.py                              # 10 operators at presets s and l
    python tools/measure/ray_vs_local.py --ops relu,gelu --preset m --out results/nvidia-h200/ray
    python tools/measure/ray_vs_local.py --ops all --preset l --executors ray --out DIR    # one pass only
    python tools/measure/ray_vs_local.py --compare DIR/local.json DIR/ray.json             # compare two passes

Exit 0 when every (operator, preset) has the same status under both executors and both passes ran to
the end, else 1 (each difference printed). The results go to temporary results folders, never to the
real one; with --out, each pass's record (wall time, statuses, medians) is written there as
<executor>.json after every result (`"complete": false` until the pass ends, so a pass cut by a time
limit keeps what it measured), and the comparison as ray_vs_local.json. One pass per run
(`--executors`) fits a long selection into separate time-limited calls; `--compare` then joins them
and says which results only one pass has.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from skillbase.bench.runner import run_bench
from skillbase.bench.suite import discover

OPS = ("relu", "gelu", "softmax", "layer_norm", "rms_norm", "matrix_mul", "matrix_transpose", "reverse_array",
       "prefix_sum", "dot_product")
EXECUTORS = ("local", "ray")


def one_pass(kind: str, ops: list[str], presets: list[str], folder: Path, record_path: Path | None) -> dict:
    """Run the baselines with one executor; its record: wall time, GPU model, one row per result. With
    record_path, the record is rewritten after every result (`complete: false` until the pass ends), so a pass
    cut by a time limit still leaves what it measured."""
    start = time.perf_counter()
    record = {"executor": kind, "gpu": None, "ops": ops, "presets": presets, "wall_s": None, "complete": False,
              "results": []}

    def save() -> None:   # whole or not at all: a pass killed mid-write keeps its last complete record
        if record_path is not None:
            record_path.parent.mkdir(parents=True, exist_ok=True)
            partial = record_path.with_name(record_path.name + ".partial")
            partial.write_text(json.dumps(record, indent=1) + "\n")
            os.replace(partial, record_path)

    def progress(result, done: int, total: int) -> None:   # a killed run still shows how far it got
        elapsed = time.perf_counter() - start
        print(f"  [{kind} {done}/{total}] {result.op} {result.preset}: {result.status} ({elapsed:.0f} s)", flush=True)
        record["results"].append(_row(result))
        record["wall_s"] = round(elapsed, 2)
        save()

    save()   # an older record at this path never stands in for a pass that died before its first result
    done = run_bench(ops, "fp32", "baseline", presets=presets, results=folder, executor_kind=kind, progress=progress)
    wall = time.perf_counter() - start
    print(f"{kind} executor: {len(done.results)} results in {wall:.1f} s (GPU model {done.gpu})", flush=True)
    record.update(gpu=done.gpu, wall_s=round(wall, 2), complete=True, results=[_row(r) for r in done.results])
    save()
    return record


def _row(result) -> dict:
    return {"op": result.op, "preset": result.preset, "status": result.status, "runtime_us": result.runtime_us,
            "device": result.device}


def compare(local: dict, ray: dict) -> tuple[dict, bool]:
    """Print each (operator, preset) of the Ray pass beside the local one; the joint record and whether
    every verdict is the same."""
    by_key = {(r["op"], r["preset"]): r for r in local["results"]}
    rows, differ = [], 0
    for r in ray["results"]:
        mine = by_key.get((r["op"], r["preset"]))
        same = mine is not None and mine["status"] == r["status"]
        differ += mine is not None and not same
        rows.append({"op": r["op"], "preset": r["preset"], "local": mine["status"] if mine else None,
                     "ray": r["status"], "local_us": mine["runtime_us"] if mine else None,
                     "ray_us": r["runtime_us"], "ray_device": r["device"]})
        ratio = f"{r['runtime_us'] / mine['runtime_us']:.3f}" \
            if mine and mine["runtime_us"] and r["runtime_us"] else "-"
        mark = "  " if same else "!!" if mine else "--"    # -- : only the Ray pass has it
        print(f"{mark} {r['op']:<18} {r['preset']:<3} local {str(rows[-1]['local']):<10} "
              f"ray {r['status']:<10} median ray/local {ratio}")
    ray_keys = {(r["op"], r["preset"]) for r in ray["results"]}
    only_local = [f"{r['op']} {r['preset']}" for r in local["results"] if (r["op"], r["preset"]) not in ray_keys]
    missing = len(only_local) + sum(row["local"] is None for row in rows)
    complete = local.get("complete", True) and ray.get("complete", True)   # records before 2026-12-02 had no flag
    identical = not differ and not missing and complete
    cut = [f"{p['executor']} ({len(p['results'])} of {len(p['ops']) * len(p['presets'])} results)"
           for p in (local, ray) if not p.get("complete", True)]
    print(f"verdicts: {'identical' if identical else f'{differ} differ, {missing} in one pass only'} "
          f"({len(rows)} results of the Ray pass)" + (f"; cut short: {', '.join(cut)}" if cut else "")
          + f"; wall time local {local['wall_s']:.1f} s, ray {ray['wall_s']:.1f} s")
    record = {"gpu": ray["gpu"] or local["gpu"], "ops": ray["ops"], "presets": ray["presets"],
              "local_wall_s": local["wall_s"], "ray_wall_s": ray["wall_s"], "complete": complete,
              "local_results": len(local["results"]), "ray_results": len(ray["results"]),
              "same_verdicts": not differ, "identical": identical, "results": rows}
    return record, identical


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default=",".join(OPS), help="comma-separated operators, or `all` (the suite)")
    parser.add_argument("--preset", default="s,l", help="comma-separated presets (default: s,l)")
    parser.add_argument("--executors", default="local,ray", help="the passes to run, in order (default: local,ray)")
    parser.add_argument("--out", type=Path, default=None, help="write <executor>.json and ray_vs_local.json here")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("LOCAL_JSON", "RAY_JSON"),
                        help="compare two passes written earlier with --out; runs nothing")
    args = parser.parse_args()
    if args.compare:
        try:
            local, ray = (json.loads(path.read_text()) for path in args.compare)
        except (OSError, ValueError) as error:
            sys.exit(f"error: cannot read a pass record: {error}")
        passes = {"local": local, "ray": ray}
    else:
        executors = [e for e in args.executors.split(",") if e]
        if not executors or set(executors) - set(EXECUTORS):
            sys.exit(f"error: --executors takes local and/or ray, not {args.executors!r}")
        ops = [op.name for op in discover()] if args.ops == "all" else [o for o in args.ops.split(",") if o]
        ops = sorted(set(ops), key=ops.index)
        presets = [p for p in args.preset.split(",") if p]
        passes = {}
        with tempfile.TemporaryDirectory(prefix="ray-vs-local-") as tmp:
            for kind in executors:
                record_path = args.out / f"{kind}.json" if args.out is not None else None
                passes[kind] = one_pass(kind, ops, presets, Path(tmp) / kind, record_path)
    if set(passes) != set(EXECUTORS):
        return 0
    record, identical = compare(passes["local"], passes["ray"])
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "ray_vs_local.json").write_text(json.dumps(record, indent=1) + "\n")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
