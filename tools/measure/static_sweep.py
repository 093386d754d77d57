"""The static analyser over many .cu files written by others: what it refuses, where it cannot parse, what it raises.

    python tools/measure/static_sweep.py FOLDER [FOLDER ...] [--list]

Every `*.cu` under the folders (local copies of public repositories, e.g. the `fetch` tool's mirrors exported with
`git archive`; nothing of them is committed) goes through `static_features`, as `skillbase evidence K.cu` and
`advise --source` do. Prints per folder: files read, files with kernels, kernels found, files refused with a one-line
error (`InputError`, by its message), files with parse errors and those with a parse error inside a kernel body,
and any other exception (a defect: the analyser must refuse with one line, never raise). `--list` names the files.
Session 26 ran it over NVIDIA/cuda-samples, karpathy/llm.c and xlite-dev/LeetCUDA (282 files): no exception; 40
refused, 23 of them because their kernel sat in an included project header (fixed: header kernels are the file's).
"""

from __future__ import annotations

import argparse
import collections
import sys
import traceback
from pathlib import Path

from skillbase.cuda import syntax
from skillbase.errors import InputError
from skillbase.evidence.static.features import static_features


def errors_inside_kernels(source: bytes) -> int:
    """Parse errors (ERROR or missing nodes) that lie inside a `__global__` function's body."""
    root = syntax.parse(source).root_node
    kernels = [n for n in syntax.walk(root) if n.type == "function_definition" and syntax.is_kernel(n)]
    return sum(1 for e in syntax.walk(root) if (e.type == "ERROR" or e.is_missing)
               and any(k.start_byte <= e.start_byte < k.end_byte for k in kernels))


def sweep(folder: Path) -> dict:
    found: dict = collections.defaultdict(list)
    counts = collections.Counter()
    for path in sorted(folder.rglob("*.cu")):
        counts["files"] += 1
        name = str(path.relative_to(folder))
        try:
            features = static_features(path)
        except InputError as error:
            text = str(error)
            reason = "no __global__ kernel" if "no __global__ kernel found" in text else text.split(": ", 1)[-1]
            found["refused: " + reason[:80]].append(name)
            continue
        except Exception as error:  # noqa: BLE001 - the point: anything but InputError is a defect
            found["EXCEPTION " + type(error).__name__].append(name + "\n" + traceback.format_exc(limit=3))
            continue
        counts["with kernels"] += 1
        counts["kernels"] += len(features["kernels"])
        if features["file"]["parse_errors"]:
            found["parse errors"].append(name)
            if errors_inside_kernels(path.read_bytes()):
                found["parse errors inside a kernel"].append(name)
    return {"counts": dict(counts), "found": dict(found)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--list", action="store_true", help="name the files of each finding")
    options = parser.parse_args()
    failed = False
    for folder in options.folders:
        if not folder.is_dir():
            print(f"error: {folder}: not a folder", file=sys.stderr)
            return 2
        result = sweep(folder)
        print(f"{folder}: " + ", ".join(f"{k} {v}" for k, v in result["counts"].items()))
        for finding, names in sorted(result["found"].items()):
            failed |= finding.startswith("EXCEPTION")
            print(f"  {len(names):4d}  {finding}")
            if options.list or finding.startswith("EXCEPTION"):
                for name in names:
                    print(f"          {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
