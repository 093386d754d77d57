"""Which corpus sources tree-sitter-cuda cannot parse whole, and the construct at each error.

    python tools/measure/parse_gaps.py            # through skillbase.cuda.syntax.parse (what every reader sees)
    python tools/measure/parse_gaps.py --grammar  # the bare grammar, nothing left out (the constructs parse hides)

Reads every .cu under skills/*/*/examples, examples/, bench/ops/ and tests/fixtures (issues 15/23, H29).
tests/fixtures/bad/broken.cu is broken on purpose.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from skillbase.cuda import syntax

ROOT = Path(__file__).resolve().parents[2]
PATTERNS = ("skills/*/*/examples/**/*.cu", "examples/**/*.cu", "bench/ops/**/*.cu", "tests/fixtures/**/*.cu")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grammar", action="store_true", help="parse with the bare grammar (before H29)")
    args = parser.parse_args()
    files = sorted({path for pattern in PATTERNS for path in ROOT.glob(pattern)})
    failing = 0
    for path in files:
        source = path.read_bytes()
        tree = syntax.parser().parse(source) if args.grammar else syntax.parse(source)
        if not tree.root_node.has_error:
            continue
        failing += 1
        print(path.relative_to(ROOT))
        lines = source.splitlines()
        for node in syntax.walk(tree.root_node):
            if node.type == "ERROR" or node.is_missing:
                what = f"missing {node.type}" if node.is_missing else "unparsed"
                context = lines[node.start_point[0]].decode(errors="replace").strip()[:100]
                print(f"    {syntax.line(node)}: {what}: {context}")
    print(f"{failing} of {len(files)} sources parse with errors")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
