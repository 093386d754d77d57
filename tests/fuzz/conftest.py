"""The fuzz suite (issue 22): its rules are in tests/fuzz_kit.py; here, the end-of-session figures."""

from __future__ import annotations

import pytest
from fuzz_kit import OUTCOMES, SCALE, TRIED


def pytest_terminal_summary(terminalreporter):
    if not TRIED:
        return
    terminalreporter.section("fuzz figures")
    for target, count in sorted(TRIED.items()):
        parts = ", ".join(f"{outcome.split(': ')[1]} {n}" for outcome, n in sorted(OUTCOMES.items())
                          if outcome.startswith(target + ": "))
        terminalreporter.write_line(f"{target}: {count} inputs ({parts})")
    failures = sum(n for outcome, n in OUTCOMES.items() if outcome.endswith(("HANG", "TRACEBACK")))
    terminalreporter.write_line(f"total: {sum(TRIED.values())} inputs, {failures} failures (scale {SCALE})")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.mktemp("fuzz-cache")))
