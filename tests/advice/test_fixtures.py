"""On every real H200 fixture, `advise` ranks the skill an expert would pick in its top 3.

The expected skill per fixture is the table in tests/fixtures/profiles/README.md (named from the
kernel's known flaw, before any rule was written); this test reads the saved report and the source
exactly as a user would.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillbase.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _expert_table() -> dict[str, str]:
    rows = {}
    for line in (FIXTURES / "profiles" / "README.md").read_text().splitlines():
        match = re.match(r"\|\s*(\w+)\s*\|.*\|\s*([a-z]+\.[a-z0-9_]+)\s*\|\s*$", line)
        if match and (FIXTURES / "profiles" / match[1]).is_dir():
            rows[match[1]] = match[2]
    return rows


EXPERT = _expert_table()


def test_the_table_covers_every_fixture():
    folders = {p.name for p in (FIXTURES / "profiles").iterdir() if (p / "report.ncu-rep.xz").exists()}
    assert len(EXPERT) >= 12 and set(EXPERT) == folders


@pytest.mark.parametrize("name", sorted(EXPERT))
def test_expert_skill_in_top_3(name, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path))
    try:
        main(["advise", "--report", str(FIXTURES / "profiles" / name / "report.ncu-rep.xz"),
              "--source", str(FIXTURES / "kernels" / f"{name}.cu"), "--json"])
    except SystemExit as exit_info:
        assert exit_info.code in (0, None)
    result = json.loads(capsys.readouterr().out)
    ranked = [c["skill"] for c in result["candidates"]]
    assert EXPERT[name] in ranked[:3], f"{name}: expected {EXPERT[name]} in the top 3, got {ranked[:5]}"


def test_static_features_reach_the_rules(monkeypatch, tmp_path):
    """Regression: vocabulary paths `kernel.x.y` must read static.kernels[<focus>].x.y (they were all
    `missing`, so every static-gated leaf was silently unknown)."""
    from skillbase.engine import Engine
    from skillbase.engine.vocabulary import MISSING
    from skillbase.evidence import build_evidence

    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path))
    evidence = build_evidence(report=FIXTURES / "profiles" / "naive_gemm" / "report.ncu-rep.xz",
                              source=FIXTURES / "kernels" / "naive_gemm.cu")
    result = Engine.load().evaluate(evidence)
    observed = {name: value for d in result.decisions for leaf in d.leaves for name, value in leaf.observed.items()}
    assert observed["src_loops"] == 1 and observed["src_global_loads"] >= 2
    assert all(observed[name] is not MISSING for name in observed if name.startswith("src_") and name in (
        "src_loops", "src_global_loads", "src_global_stores", "src_uses_smem"))
