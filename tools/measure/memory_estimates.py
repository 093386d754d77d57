"""How tight each judgement's device-memory reservation was: the reserved bytes beside its allocators' peaks.

    python tools/measure/memory_estimates.py STORE [--json]

A `check` worker reserves its estimated device bytes before it draws anything (harness/gpu_memory.py,
`judgement_bytes`: an upper bound) and records beside them the peaks CuPy's pool and torch's allocator reached
(`CheckResult.memory`); every judged candidate's verdict step keeps them (`memory`). Two KernelBench activation
judgements waited 40-94 s for each other's memory on the H200 in session 24: this says how much of the
reservation a judgement used, so the estimate can be tightened from figures rather than guessed.
One line per verdict that recorded a reservation; verdicts from before the figures were kept are skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from skillbase.run.store import RunStore  # noqa: E402

GIB = 2**30


def rows(store_path: Path) -> list[dict]:
    store = RunStore.open(store_path, read_only=True)
    try:
        out = []
        for run in store.list_runs():
            for key in store.judged_sources(run.id):
                memory = (store.step_result(run.id, f"{key}/verdict") or {}).get("memory") or {}
                reserved = memory.get("reserved_bytes")
                if not isinstance(reserved, int):
                    continue
                peak = max((v for k, v in memory.items() if k.endswith("_bytes") and k != "reserved_bytes"
                            and isinstance(v, int)), default=None)
                out.append({"run": run.name, "key": key, "reserved_bytes": reserved, "peak_bytes": peak,
                            "used": peak / reserved if peak is not None and reserved else None,
                            "estimate_error": memory.get("estimate_error")})
        return out
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--json", action="store_true", help="one JSON document instead of lines")
    args = parser.parse_args(argv)
    if not (args.store / "runs.sqlite3").is_file():
        print(f"error: {args.store}: no run store here (runs.sqlite3)", file=sys.stderr)
        return 2
    found = rows(args.store)
    if args.json:
        print(json.dumps({"verdicts": found}, indent=1))
        return 0
    for r in found:
        peak = f"{r['peak_bytes'] / GIB:.2f} GiB" if r["peak_bytes"] is not None else "-"
        used = f"{r['used']:.0%}" if r["used"] is not None else "-"
        error = f"  (estimate failed: {r['estimate_error']})" if r["estimate_error"] else ""
        print(f"{r['run']} {r['key']}: reserved {r['reserved_bytes'] / GIB:.2f} GiB, peak {peak}, used {used}{error}")
    print(f"{len(found)} verdict(s) with a reservation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
