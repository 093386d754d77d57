"""The real H200 reports of tests/fixtures/profiles, committed xz-compressed (`<name>/report.ncu-rep.xz`, 10x
smaller: the working tree travels to the GPU machine). Every skillbase reader takes the `.xz`; `plain_report`
gives its decompressed copy (made once, in the cache) to the tests that read a report's bytes or call
`load_ncu_report`, the reader of plain reports, themselves."""

from __future__ import annotations

from pathlib import Path

from skillbase.evidence.compressed import plain_file

PROFILES = Path(__file__).resolve().parent / "fixtures" / "profiles"
REPORT_NAME = "report.ncu-rep.xz"


def report(name: str) -> Path:
    """The committed (compressed) report of fixture NAME."""
    return PROFILES / name / REPORT_NAME


def plain_report(name: str) -> Path:
    """Fixture NAME's report as ncu wrote it."""
    return plain_file(report(name))


def names() -> list[str]:
    """Every fixture folder with a saved report."""
    return sorted(p.name for p in PROFILES.iterdir() if (p / REPORT_NAME).is_file()) if PROFILES.is_dir() else []
