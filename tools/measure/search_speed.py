"""How long `skillbase skills search` takes: per process (the CLI, 5 runs after a warm-up that leaves
the index cached), and inside one process (the first query, then 9 more). Figures in
results/cpu/search-speed.md.

    python tools/measure/search_speed.py                          # this checkout
    python tools/measure/search_speed.py --checkout /tmp/before   # per process only, another checkout
        (e.g. `git archive 6f031a8^ | tar -x -C /tmp/before`: search before issue 19)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUERY = "registers spill to local memory"
QUERIES = [QUERY, "bank conflicts in shared memory", "uncoalesced strided loads", "too few thread blocks",
           "use tensor cores for a GEMM", "launch overhead of many small kernels", "atomics on one global counter",
           "warp divergence in an if statement", "float4 vector loads", "softmax in one pass"]


def per_process(checkout: Path, args: list[str], runs: int = 5) -> list[float]:
    command = [sys.executable, "-m", "skillbase", "skills", "search", *args, QUERY]
    # run from the checkout: `python -m` puts the working directory first on sys.path
    subprocess.run(command, cwd=checkout, check=True, capture_output=True)       # warm-up: the index is cached
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=checkout, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def in_process() -> list[str]:
    from skillbase.corpus import search
    from skillbase.corpus.load import load_corpus

    corpus = load_corpus(strict=False)
    lines = []
    for semantic in (False, True):
        if semantic and not search.available():
            lines.append("by meaning: the search extra is not installed")
            continue
        start = time.perf_counter()
        search.search(corpus, QUERIES[0], 5, semantic=semantic)
        first = time.perf_counter() - start
        later = []
        for query in QUERIES[1:]:
            start = time.perf_counter()
            search.search(corpus, query, 5, semantic=semantic)
            later.append(time.perf_counter() - start)
        lines.append(f"{'by meaning' if semantic else 'by words'}: first query {first:.3f} s; the next 9: median "
                     f"{statistics.median(later) * 1e3:.1f} ms, max {max(later) * 1e3:.1f} ms")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parents[2])
    options = parser.parse_args()
    load = lambda: os.getloadavg()[0]  # noqa: E731 - the machine is shared: say how busy it was
    variants = [("default", [])]
    if options.checkout == Path(__file__).resolve().parents[2]:
        variants.append(("--semantic", ["--semantic"]))
    for name, args in variants:
        times = per_process(options.checkout, args)
        print(f"per process, {name}: " + " ".join(f"{t:.2f}" for t in times)
              + f" s (median {statistics.median(times):.2f} s; load average {load():.1f}, {os.cpu_count()} CPUs)")
    if len(variants) > 1:
        for line in in_process():
            print(f"in one process, {line} (load average {load():.1f})")


if __name__ == "__main__":
    main()
