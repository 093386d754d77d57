"""Rebuild the dev set's evidence fixtures from the local profiles and sources in `.devset/`.

    python tools/measure/advice/build_fixtures.py                  # every step whose report is here
    python tools/measure/advice/build_fixtures.py --profiles DIR   # reports under DIR/devset/<prog>/
    python tools/measure/advice/build_fixtures.py --dry-run        # say what would be built, write nothing

`.devset/profiles/{tune,test}/devset/<prog>/<version>.ncu-rep` (H200 profiles: `ncu --set full`
plus the metrics the rules read) and `<version>.src/` (the version's own files at the recorded
commit) come from the local recipe in `.devset/`, which is not committed (third-party code).
`--profiles DIR` reads them from DIR/devset/<prog>/ instead (the folder `.devset/profile.sh`
writes as $OUT), whatever the half. A step whose report or source is absent is skipped and listed.
The evidence keeps every metric of the report (rules may read more later) and names the source by
repository, commit and path, never by a local folder.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import devset  # noqa: E402

from skillbase.evidence import build_evidence  # noqa: E402


def evidence_for(step: devset.Step, folder: Path) -> str:
    """The evidence JSON of one step from its report and source in `folder` (<version>.ncu-rep, <version>.src/)."""
    report, source = folder / f"{step.version}.ncu-rep", folder / f"{step.version}.src" / step.path
    evidence = build_evidence(report=report, source=source, kernel=step.kernel)
    origin = f"{step.repo}@{step.commit[:12]}:{step.path}"
    evidence.producer["source_path"] = origin
    evidence.producer["report"] = f"{step.key}.ncu-rep (H200, ncu 2025.3.1, --set full, --clock-control none)"
    # The local folder names mean nothing elsewhere: keep the notes, without them.
    evidence.notes = [re.sub(re.escape(str(folder)) + r"[^\s']*", step.path, n) for n in evidence.notes]
    if evidence.static:
        evidence.static["file"]["path"] = origin
    text = evidence.to_json()
    assert str(devset.LOCAL) not in text and str(folder) not in text, f"{step.key}: a local path leaked"
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=Path, help="folder holding devset/<prog>/<version>.ncu-rep and .src/ "
                        "(default: .devset/profiles/<half>/)")
    parser.add_argument("--dry-run", action="store_true", help="build each evidence, write no fixture")
    args = parser.parse_args(argv)
    built, missing = 0, []
    for step in devset.steps():
        root = args.profiles if args.profiles else devset.LOCAL / "profiles" / step.half
        folder = root / "devset" / step.prog
        source = folder / f"{step.version}.src" / step.path
        if not (folder / f"{step.version}.ncu-rep").is_file() or not source.is_file():
            missing.append(step.key)
            continue
        text = evidence_for(step, folder)
        if not args.dry_run:
            devset.write_fixture(step, text)
        built += 1
        data = json.loads(text)
        print(f"{step.key:45s} {data['focus_kernel'][:40]:40s} {len(data['kernels'][0]['metrics'])} metrics")
    print(f"{'checked (dry run, nothing written)' if args.dry_run else 'built'} {built} fixtures; "
          f"missing locally: {len(missing)} {missing[:5]}")
    return 0 if built else 1


if __name__ == "__main__":
    sys.exit(main())
