"""Rebuild rules/fixtures/<name>.evidence.json from the real H200 profiles in tests/fixtures/profiles.

Each fixture is the evidence `skillbase evidence` builds from the saved report, the kernel source and
its ptxas log, with the metrics trimmed to the ncu names the vocabulary reads (so the files stay
small; the full reports remain in tests/fixtures/profiles). Run from the repository root:

    python tools/make_rule_fixtures.py
"""

from __future__ import annotations

import json
from pathlib import Path

from skillbase.engine import Engine
from skillbase.evidence import build_evidence

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "tests" / "fixtures" / "profiles"
KERNELS = ROOT / "tests" / "fixtures" / "kernels"
OUT = ROOT / "rules" / "fixtures"


def main() -> None:
    wanted = set(Engine.load(use_cache=False).required_ncu_metrics())
    OUT.mkdir(exist_ok=True)
    for folder in sorted(p for p in PROFILES.iterdir() if (p / "report.ncu-rep.xz").exists()):
        evidence = build_evidence(report=folder / "report.ncu-rep.xz", source=KERNELS / f"{folder.name}.cu",
                                  ptxas_text=(folder / "ptxas.txt").read_text())
        document = json.loads(evidence.to_json())
        for kernel in document["kernels"]:
            kernel["metrics"] = {k: v for k, v in sorted(kernel["metrics"].items()) if k in wanted}
        document["producer"]["source_path"] = str((folder / "report.ncu-rep.xz").relative_to(ROOT))
        if document.get("static") and document["static"].get("file"):
            document["static"]["file"]["path"] = str((KERNELS / f"{folder.name}.cu").relative_to(ROOT))
        target = OUT / f"{folder.name}.evidence.json"
        target.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
        print(f"{target.relative_to(ROOT)}: {len(document['kernels'])} kernel(s), focus {document['focus_kernel']}")


if __name__ == "__main__":
    main()
