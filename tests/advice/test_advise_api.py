"""`skillbase.advise` as a notebook calls it: `advise(...)` returns the evidence, the ranked result and
the engine; `why_not` answers from an Advice or from an engine and its result; one input only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toy_rules import M, evidence, make_ruleset

from skillbase.advise import Advice, advise, why_not
from skillbase.errors import InputError
from skillbase.evidence import load_evidence_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def setup(tmp_path):
    root = make_ruleset(tmp_path / "rules")
    ev = tmp_path / "k.evidence.json"
    ev.write_text(json.dumps(evidence({M["dram"]: 90.0, M["sm"]: 20.0, M["ls"]: 8.0, M["cpi"]: 10.0})))
    return root, ev


def test_advice_from_an_evidence_file_or_object(setup):
    root, ev = setup
    advice = advise(evidence=ev, rules_dirs=[root])
    assert isinstance(advice, Advice) and advice.evidence.focus_kernel == "k"
    assert [c.skill for c in advice.result.candidates][:2] == ["mem.coalesce", "mem.smem_tiling"]
    assert advice.notes == [f"evidence from {ev}"]
    again = advise(evidence=load_evidence_json(ev), rules_dirs=[root])
    assert [c.skill for c in again.result.candidates] == [c.skill for c in advice.result.candidates]


def test_why_not_from_an_advice_or_an_engine_and_its_result(setup):
    root, ev = setup
    advice = advise(evidence=ev, rules_dirs=[root])
    from_advice = why_not(advice, "mem.coalesce")
    assert from_advice["proposed"] and from_advice["rank"] == 1
    assert from_advice == why_not(advice.engine, "mem.coalesce", advice.result)
    with pytest.raises(InputError, match="no rule proposes `mem.coalese`") as error:
        why_not(advice, "mem.coalese")
    assert "did you mean `mem.coalesce`" in error.value.hint
    with pytest.raises(TypeError):
        why_not(advice.engine, "mem.coalesce")


def test_one_input_only(setup):
    root, ev = setup
    with pytest.raises(InputError, match="give one input"):
        advise(rules_dirs=[root])
    with pytest.raises(InputError, match="give one input"):
        advise(report=ev, evidence=ev, rules_dirs=[root])
    with pytest.raises(InputError, match="give one input"):
        advise(evidence=ev, source=ev, rules_dirs=[root])


def test_a_report_with_its_source_carries_static_features():
    advice = advise(report=FIXTURES / "profiles" / "naive_gemm" / "report.ncu-rep.xz",
                    source=FIXTURES / "kernels" / "naive_gemm.cu")
    assert advice.evidence.static and advice.result.kernel == "sgemm_naive"
    assert advice.notes[1] == f"static features from {FIXTURES / 'kernels' / 'naive_gemm.cu'}"
