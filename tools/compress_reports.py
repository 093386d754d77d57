"""Replace committed Nsight Compute reports by their xz-compressed copies, in git too.

    python tools/compress_reports.py results/nvidia-h200/population/*.ncu-rep

Each REPORT.ncu-rep becomes REPORT.ncu-rep.xz (xz -9, read back and compared before anything is
removed): `git rm` of the old, `git add` of the new, nothing committed. Every skillbase reader takes
the `.xz` (skillbase.evidence.compressed); ncu reports shrink about 10x, which keeps the working tree
small enough for a trip to the GPU machine (64 MiB with the wheels).
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from skillbase.evidence.compressed import compress_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path)
    args = parser.parse_args()
    before = after = 0
    for report in args.reports:
        if not report.name.endswith(".ncu-rep"):
            parser.error(f"{report}: not a .ncu-rep")
        packed = compress_file(report, report.with_name(report.name + ".xz"))
        before, after = before + report.stat().st_size, after + packed.stat().st_size
        subprocess.run(["git", "rm", "-q", "--", str(report)], check=True)
        subprocess.run(["git", "add", "--", str(packed)], check=True)
    print(f"{len(args.reports)} reports: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
