"""A metric beyond float's range (JSON allows integers of any length) is a wrong-typed value with a
note, never an OverflowError (found by the fuzz suite, issue 22)."""

from __future__ import annotations

import pytest
from toy_rules import M, evidence, make_ruleset


@pytest.mark.parametrize("value", [10 ** 400, -(10 ** 5000), 2 ** 70 + 0.5], ids=["1e400", "-1e5000", "2^70"])
def test_a_huge_metric_is_missing_with_a_note(tmp_path, monkeypatch, value):
    from skillbase.engine import Engine

    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    engine = Engine.load([make_ruleset(tmp_path / "rules")])
    result = engine.evaluate(evidence({M["dram"]: value, M["sm"]: 20.0}))
    if isinstance(value, int):
        assert any("dram_pct" in note and "float range" in note for note in result.problems), result.problems
        assert all(len(note) < 400 for note in result.problems)
    assert result.to_json()["facts"] is not None
