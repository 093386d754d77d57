"""Regenerate the bench suite's baseline kernels and specs: `python bench/tools/generate.py [--check]`.

`--check` writes nothing and exits 1 when a checked-in file differs from what the tables produce.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gen  # noqa: E402
import ops_elementwise  # noqa: E402,F401

for _module in ("ops_reduction", "ops_dense", "ops_llm", "ops_sparse", "ops_scientific", "vendors"):
    if (Path(__file__).resolve().parent / f"{_module}.py").exists():
        __import__(_module)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    changed = _gen.write_all(check=check)
    for path in changed:
        print(("stale: " if check else "wrote: ") + path)
    return 1 if (check and changed) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
