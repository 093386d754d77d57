"""Merge the rows of a `skills verify -o NEW.md` run (its NEW.json) into the committed skill-examples table.

    python tools/measure/merge_examples.py NEW.json --population DIR --note "what ran, when"

Each skill's row in results/nvidia-h200/skill-examples.json is replaced by the new one (new skills are
added), the Markdown is rendered again under its unchanged preamble, the note is appended to the
Command line, and, for rows verified faster, the kept `before` profile and source (DIR/<id>.before.*,
from `--keep-profiles`) are copied into the population, the report xz-compressed (<id>.before.ncu-rep.xz:
10x smaller, and every reader takes it). A row that is not faster keeps its old profile out of the
population (it is no example of its skill yet).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from skillbase.corpus.verify import ExampleResult, to_markdown
from skillbase.evidence.compressed import compress_file

RESULTS = Path(__file__).resolve().parents[2] / "results" / "nvidia-h200"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("new", type=Path)
    parser.add_argument("--population", type=Path, help="the --keep-profiles folder of that run")
    parser.add_argument("--note", required=True, help="appended to the table's Command line")
    args = parser.parse_args()
    table = RESULTS / "skill-examples.json"
    rows = {r["skill"]: r for r in json.loads(table.read_text())}
    new = json.loads(args.new.read_text())
    for row in new:
        rows[row["skill"]] = row
        if args.population and row["verdict"] == "faster":
            name = f"{row['skill']}.before"
            shutil.copy2(args.population / f"{name}.cu", RESULTS / "population" / f"{name}.cu")
            compress_file(args.population / f"{name}.ncu-rep", RESULTS / "population" / f"{name}.ncu-rep.xz")
    merged = [rows[k] for k in sorted(rows)]
    table.write_text(json.dumps(merged, indent=1) + "\n")
    md = RESULTS / "skill-examples.md"
    text = md.read_text()
    preamble, _, rest = text.partition("Command: `")
    command = rest.split("`\n", 1)[0] + f"; {args.note}"
    md.write_text(preamble + to_markdown([ExampleResult(**r) for r in merged], command))
    print(f"{len(new)} rows merged; {len(merged)} in the table; "
          f"{sum(r['verdict'] == 'faster' for r in merged)} faster")


if __name__ == "__main__":
    main()
