"""How fast is `advise`? Prints import, rule-load, evaluate and whole-CLI figures.

Budget (the project's): `skillbase advise --report X` under 1 s wall on a 2-core machine,
Python start-up included; evaluating the whole rule set under 20 ms.

    python tools/measure/bench_advise.py [--report R.ncu-rep] [--evidence E.json] [--runs 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]          # tools/measure/ -> the checkout


def wall(args: list[str], env: dict[str, str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", default=str(REPO / "tests/fixtures/profiles/naive_gemm/report.ncu-rep.xz"))
    parser.add_argument("--evidence", default=str(REPO / "rules/fixtures/naive_gemm.evidence.json"))
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    cache = tempfile.mkdtemp(prefix="skillbase-bench-cache-")
    env = dict(os.environ, SKILLBASE_CACHE=cache)
    os.environ["SKILLBASE_CACHE"] = cache
    py = sys.executable

    bare = statistics.median(wall([py, "-c", "pass"], env, 5))
    engine_import = statistics.median(wall([py, "-c", "import skillbase.engine.evaluate"], env, 5))
    cli_import = statistics.median(wall([py, "-c", "import skillbase.cli"], env, 5))
    print(f"python start-up                 {bare * 1000:7.1f} ms")
    print(f"import skillbase.engine.evaluate {engine_import * 1000:6.1f} ms (incl. start-up)")
    print(f"import skillbase.cli            {cli_import * 1000:7.1f} ms (incl. start-up)")

    from skillbase.engine import Engine

    start = time.perf_counter()
    Engine.load(use_cache=False)
    uncached_ms = (time.perf_counter() - start) * 1000
    print(f"rule load, uncached (parse)     {uncached_ms:7.1f} ms  (includes rule-engine import)")
    Engine.load()  # writes the cache
    loads = []
    for _ in range(5):
        start = time.perf_counter()
        engine = Engine.load()
        loads.append(time.perf_counter() - start)
    print(f"rule load, cached (median of 5) {statistics.median(loads) * 1000:7.1f} ms  "
          f"({len(engine.rules)} rules, {len(engine.vocabulary.entries)} names)")

    evidence = json.loads(Path(args.evidence).read_text())
    engine.evaluate(evidence)
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        engine.evaluate(evidence)
        times.append(time.perf_counter() - start)
    print(f"evaluate, median of {args.runs:<3}        {statistics.median(times) * 1000:7.2f} ms  "
          f"(p90 {sorted(times)[int(0.9 * len(times))] * 1000:.2f} ms) on {Path(args.evidence).name}")

    script = Path(sys.prefix, "bin", "skillbase")
    skillbase = [str(script)] if script.exists() else [py, "-m", "skillbase"]
    for label, extra in (("--evidence", ["--evidence", args.evidence]), ("--report", ["--report", args.report])):
        if not Path(extra[1]).is_file():
            print(f"whole CLI advise {label:10} skipped ({extra[1]} missing)")
            continue
        subprocess.run(skillbase + ["advise", *extra], env=env, capture_output=True)  # warm the cache
        runs = wall(skillbase + ["advise", *extra], env, 5)
        print(f"whole CLI advise {label:10}     {statistics.median(runs) * 1000:7.1f} ms  "
              f"(median of 5, max {max(runs) * 1000:.1f} ms)")
    print(f"cpus: {os.cpu_count()}")


if __name__ == "__main__":
    main()
