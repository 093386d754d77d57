"""Engine semantics on small rule sets written for each test: three-valued logic without
short-circuit, missing values, stratified derivations, ranking, history, `because` templates.

`make_ruleset` (used by the other engine tests too) writes a vocabulary, a thresholds file and
rules into a temporary folder, so these tests do not depend on the built-in rules' contents.
"""

from __future__ import annotations

import json

import pytest
from toy_rules import RULES, THRESHOLDS, VOCABULARY, M, evidence, make_ruleset  # noqa: F401

from skillbase.errors import InputError


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def engine(tmp_path):
    from skillbase.engine import Engine

    return Engine.load([make_ruleset(tmp_path / "rules")])


def test_all_leaves_are_recorded_even_when_the_first_leaf_is_false(engine):
    # dram 5% makes bottleneck.memory's first leaf false; the second is still evaluated and recorded
    result = engine.evaluate(evidence({M["dram"]: 5.0, M["sm"]: 3.0}))
    decision = result.decision("bottleneck.memory")
    assert [leaf.path for leaf in decision.leaves] == ["when.all[0]", "when.all[1]"]
    assert [leaf.result for leaf in decision.leaves] == [False, True]
    assert decision.fired is False and decision.result is False
    assert decision.leaves[0].observed == {"sol_max": 5.0, "threshold_sol_high": 80.0}
    assert decision.leaves[0].source.endswith("bottleneck.memory.yaml:6")


def test_missing_metric_makes_the_leaf_missing_not_false(engine):
    from skillbase.engine import MISSING

    result = engine.evaluate(evidence({M["dram"]: 90.0}))  # no SM throughput
    decision = result.decision("bottleneck.memory")
    # sol_max reads sm_pct, so it is missing too; `all` of (missing, missing) is missing
    assert [leaf.result for leaf in decision.leaves] == [None, None]
    assert decision.result is None and not decision.fired
    assert decision.leaves[1].observed["sm_pct"] is MISSING
    assert decision.leaves[1].to_json()["observed"]["sm_pct"] == "missing"
    assert decision.leaves[1].to_json()["result"] == "missing"


def test_kleene_all_any_not():
    from skillbase.engine.trace import combine

    assert combine("all", [True, None]) is None
    assert combine("all", [None, False]) is False  # false wins over missing
    assert combine("any", [None, True]) is True
    assert combine("any", [False, None]) is None
    assert combine("not", [None]) is None
    assert combine("not", [False]) is True


def test_missing_sentinel_is_distinct_from_none_and_false(engine):
    from skillbase.engine import MISSING

    view = engine.vocabulary.view(evidence({M["dram"]: 0.0}), engine.thresholds)
    assert view["dram_pct"] == 0.0
    assert view["sm_pct"] is MISSING
    assert MISSING is not None and MISSING != False  # noqa: E712 - that is the point
    assert view["has_atomics"] is MISSING  # no static block at all


def test_sources_and_types(engine):
    static = {"kernels": {"k": {"shared": {"static_bytes": 4096}, "atomics": {"any": True}}}}
    ev = evidence({M["dram"]: 50}, ptxas={"k": {"registers": 40.0}}, static=static,
                  history={"tried": [], "failed": ["mem.coalesce", {"skill": "mem.vectorize"}], "won": []})
    view = engine.vocabulary.view(ev, engine.thresholds)
    assert view["dram_pct"] == 50.0 and isinstance(view["dram_pct"], float)
    assert view["registers"] == 40 and isinstance(view["registers"], int)  # integral float accepted for int
    assert view["block_x"] == 256
    assert view["smem_static"] == 4096
    assert view["has_atomics"] is True
    assert view["device_name"] == "NVIDIA H200"
    assert view["failed_count"] == 2
    assert view["threshold_sol_high"] == 80.0
    assert view["stall_ls_share"] is not None


def test_wrong_type_in_evidence_is_missing_with_a_note(engine):
    from skillbase.engine import MISSING

    view = engine.vocabulary.view(evidence(ptxas={"k": {"registers": "forty"}}), engine.thresholds)
    assert view["registers"] is MISSING
    assert any("registers" in p and "integer" in p for p in view.problems)


def test_derived_division_by_zero_is_missing(tmp_path):
    from skillbase.engine import MISSING, Engine

    vocab = VOCABULARY.replace('"cpi > 0 ? stall_ls / cpi : 0"', '"stall_ls / cpi"')
    engine = Engine.load([make_ruleset(tmp_path / "r", vocabulary=vocab)])
    view = engine.vocabulary.view(evidence({M["ls"]: 1.0, M["cpi"]: 0.0}), engine.thresholds)
    assert view["stall_ls_share"] is MISSING
    assert any("stall_ls_share" in p for p in view.problems)


def test_stratification_runs_fact_writers_before_readers(engine):
    order = [r.id for r in engine.derive_order]
    assert order.index("bottleneck.memory") < order.index("a.hot")
    result = engine.evaluate(evidence({M["dram"]: 90.0, M["sm"]: 20.0, M["ls"]: 8.0, M["cpi"]: 10.0}))
    assert result.facts == {"bottleneck": "MEMORY", "hot": True}
    assert result.decision("a.hot").derived == {"hot": True}


def test_ranking_best_proposal_all_rules_and_ties(engine):
    result = engine.evaluate(evidence({M["dram"]: 90.0, M["sm"]: 20.0, M["ls"]: 8.0, M["cpi"]: 10.0}))
    skills = [c.skill for c in result.candidates]
    # mem.coalesce: score 0.9 from x.coalesce (speedup 1.6 clamped to 1.0), also proposed by x.coalesce-weak
    top = result.candidates[0]
    assert top.skill == "mem.coalesce" and top.score == 0.9 and top.time_saved_fraction == 1.0
    assert top.rules == ["x.coalesce", "x.coalesce-weak"] and top.best_rule == "x.coalesce"
    # three at score 0.5, ordered by the expected saving score x sqrt(speedup): 0.2 first, then 0.1, then
    # the one without an estimate (assumed 0.1: a computed estimate wins the tie)
    assert skills[1:] == ["mem.smem_tiling", "mem.vectorize", "mem.aaa_nospeedup"]
    assert [c.rank for c in result.candidates] == [1, 2, 3, 4]


def test_ranking_tie_on_score_and_speedup_breaks_by_id():
    from skillbase.engine.ranking import rank

    proposals = [dict(skill=s, score=0.5, time_saved_fraction=0.1, rule="r", because="", focus=[])
                 for s in ("b.x", "a.y", "c.z")]
    assert [c.skill for c in rank(proposals)] == ["a.y", "b.x", "c.z"]


def test_history_demotes_failed_then_tried(engine):
    ev = evidence({M["dram"]: 90.0, M["sm"]: 20.0, M["ls"]: 8.0, M["cpi"]: 10.0},
                  history={"tried": ["mem.smem_tiling"], "failed": [{"skill": "mem.coalesce", "reason": "slower"}],
                           "won": []})
    result = engine.evaluate(ev)
    assert [c.skill for c in result.candidates] == ["mem.vectorize", "mem.aaa_nospeedup", "mem.smem_tiling",
                                                    "mem.coalesce"]
    assert result.candidates[-1].demoted == "failed" and result.candidates[-2].demoted == "tried"


def test_because_fills_values_and_names_what_was_not_measured(engine):
    # issue 15: a missing value leaves its clause out (never "missing%" in the text) and is named once
    result = engine.evaluate(evidence({M["dram"]: 91.4, M["ls"]: 8.0, M["cpi"]: 10.0}))
    assert result.decision("bottleneck.memory").because == "DRAM 91% (sm_pct not measured)."
    assert result.decision("x.coalesce-weak").because == "DRAM at 91%."


def test_because_survives_bad_format_spec():
    from skillbase.engine import MISSING
    from skillbase.engine.trace import render_because

    rendered = render_because("{a:.2f} and {b:.1f} and {c}", {"a": "text", "b": MISSING, "c": 1})
    assert rendered == "text and 1 (b not measured)"
    assert render_because("{x:.0%} of branch targets diverge.", {"x": MISSING}) == "(x not measured)."
    assert render_because("{d:.0f}% but {l1:.0f}%, hits {h:.0f}%: reused.", {"d": MISSING, "l1": 99, "h": 88}) \
        == "99%, hits 88%: reused (d not measured)."


def test_speedup_missing_is_null_and_not_fired_rule_proposes_nothing(engine):
    result = engine.evaluate(evidence({M["dram"]: 50.0, M["sm"]: 20.0}))
    assert "x.coalesce" not in {r for c in result.candidates for r in c.rules}
    assert result.decision("x.coalesce").proposals == [
        {"skill": "mem.coalesce", "score": 0.9, "time_saved_fraction": None}]


def test_focus_rows_name_observed_and_threshold(engine):
    result = engine.evaluate(evidence({M["dram"]: 90.0, M["sm"]: 20.0, M["ls"]: 8.0, M["cpi"]: 10.0}))
    top = result.candidates[0]
    rows = {(r.name, r.op) for r in top.focus}
    assert ("hot", None) in rows or ("hot", "==") in rows or any(r.name == "hot" for r in top.focus)
    share = next(r for r in top.focus if r.name == "stall_ls_share")
    assert share.op == ">" and share.threshold == 0.3 and share.threshold_name == "threshold_stall_share"
    assert share.observed == pytest.approx(0.8)
    # registers > 128 was false inside a true `any`: not evidence for the proposal
    assert not any(r.name == "registers" for r in top.focus)
    dram = next(r for r in result.candidates if r.skill == "mem.vectorize").focus[0]
    assert (dram.name, dram.op, dram.threshold, dram.metric) == ("dram_pct", ">", 10.0, M["dram"])


def test_result_to_json_records_thresholds_and_is_serialisable(engine):
    result = engine.evaluate(evidence({M["dram"]: 90.0}))
    data = json.loads(json.dumps(result.to_json()))
    assert data["thresholds"]["path"].endswith("ncu-defaults.yaml")
    assert data["thresholds"]["digest"].startswith("sha256:")
    assert data["focus_kernel"] == "k" and data["focus_reason"] == "the only kernel"
    rules = {"a.hot", "bottleneck.memory", "x.coalesce", "x.coalesce-weak", "x.tile"}
    assert {d["rule"] for d in data["decisions"]} == rules
    assert all(leaf["result"] in ("true", "false", "missing") for d in data["decisions"] for leaf in d["leaves"])


def test_thresholds_file_selects_values(tmp_path):
    from skillbase.engine import Engine

    root = make_ruleset(tmp_path / "r")
    other = tmp_path / "calibrated.yaml"
    other.write_text('sol_high: {value: 95, provenance: "calibrated on 40 H200 kernels"}\n'
                     'stall_share: {value: 0.5, provenance: test}\n')
    engine = Engine.load([root], thresholds=other)
    result = engine.evaluate(evidence({M["dram"]: 90.0, M["sm"]: 20.0}))
    assert result.facts == {}  # 90 < 95: not memory-bound under the calibrated file
    assert result.thresholds["path"] == str(other)


def test_thresholds_given_as_text_decide_like_the_same_file(tmp_path):
    # calibrate compares thresholds it has not written anywhere
    from skillbase.engine import Engine, Thresholds

    root = make_ruleset(tmp_path / "r")
    text = 'sol_high: {value: 95, provenance: "calibrated"}\nstall_share: {value: 0.5, provenance: test}\n'
    (tmp_path / "calibrated.yaml").write_text(text)
    from_file = Engine.load([root], thresholds=tmp_path / "calibrated.yaml")
    from_text = Engine.load([root], thresholds=Thresholds.parse(text, "calibrated (not written)"))
    ev = evidence({M["dram"]: 90.0, M["sm"]: 20.0})
    assert from_text.evaluate(ev).facts == from_file.evaluate(ev).facts == {}
    assert from_text.thresholds.values == from_file.thresholds.values
    assert from_text.thresholds.digest == from_file.thresholds.digest
    assert from_text.evaluate(ev).thresholds["path"] == "calibrated (not written)"


def test_proposers_of_a_skill_come_from_the_parsed_rules(engine):
    # `skills show` lists them: the engine's own rules, never a second reading of the YAML
    assert [r.id for r in engine.proposers_of("mem.coalesce")] == ["x.coalesce", "x.coalesce-weak"]
    assert engine.proposers_of("mem.coalesce")[0].proposal_for("mem.coalesce").score == 0.9
    assert engine.proposers_of("no.such_skill") == []


def test_kernel_selection(engine):
    ev = evidence({M["dram"]: 90.0, M["sm"]: 20.0})
    ev["kernels"].append({"name": "other_kernel", "launches": 3, "duration_ns": 10.0, "metrics": {M["dram"]: 1.0}})
    assert engine.evaluate(ev, kernel="other").kernel == "other_kernel"
    with pytest.raises(InputError, match="no kernel matches `nothing`"):
        engine.evaluate(ev, kernel="nothing")


def test_overrides_pin_facts_and_unknown_names_are_errors(engine):
    result = engine.evaluate(None, overrides={"bottleneck": "MEMORY", "stall_ls_share": 0.5})
    assert result.facts["bottleneck"] == "MEMORY" and result.facts["hot"] is True
    with pytest.raises(InputError, match="unknown vocabulary name `dram_pc`"):
        engine.evaluate(None, overrides={"dram_pc": 1})
    with pytest.raises(InputError, match="registers"):
        engine.evaluate(None, overrides={"registers": "many"})


def test_required_ncu_metrics_follow_derived_names(engine):
    assert engine.required_ncu_metrics() == sorted(M.values())


def test_evaluation_never_imports_rule_engine_from_cache(tmp_path):
    # a cached load must not pay rule-engine's ~0.3 s import (checked in a fresh interpreter)
    import subprocess
    import sys

    from skillbase.engine import Engine

    root = make_ruleset(tmp_path / "r")
    cache = tmp_path / "c"
    code = ("import os, sys, json; from skillbase.engine import Engine; e = Engine.load([sys.argv[1]]);"
            "e.evaluate(json.loads(sys.argv[2])); print('rule_engine' in sys.modules)")
    env = dict(__import__("os").environ, SKILLBASE_CACHE=str(cache))
    args = [sys.executable, "-c", code, str(root), json.dumps(evidence({M["dram"]: 90.0}))]
    first = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    second = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    assert first.stdout.strip() == "True" and second.stdout.strip() == "False"
    assert Engine  # imported for the side effect of checking the package imports here too


def test_a_skill_that_won_ranks_again_when_its_rule_fires_again():
    # issue 15: experts repeat a step that paid (more stages, more elements per thread): a win is not
    # demoted below the untried skills; its estimate, read on the profile after the win, is what is left of
    # its gain and is not discounted again (WON_AGAIN 1); a try without a win is
    from skillbase.engine.ranking import WON_AGAIN, rank

    def proposals():
        return [dict(skill="a.won", score=0.8, time_saved_fraction=0.36, rule="a", because="", focus=[]),
                dict(skill="b.new", score=0.8, time_saved_fraction=0.25, rule="b", because="", focus=[]),
                dict(skill="c.new", score=0.8, time_saved_fraction=0.16, rule="c", because="", focus=[])]

    won = rank(proposals(), history={"tried": ["a.won"], "won": ["a.won"], "failed": []})
    # 0.8 x 0.6 = 0.48 for the win, above b.new's 0.4 and c.new's 0.32, exactly as without history
    assert WON_AGAIN == 1.0 and [c.skill for c in won] == ["a.won", "b.new", "c.new"]
    assert [c.expected for c in won] == [c.expected for c in rank(proposals())]
    assert won[0].demoted == "won" and won[1].demoted is None
    tried = rank(proposals(), history={"tried": ["a.won"], "won": [], "failed": []})
    assert [c.skill for c in tried] == ["b.new", "c.new", "a.won"] and tried[-1].demoted == "tried"
    failed = rank(proposals(), history={"tried": ["a.won"], "won": ["a.won"], "failed": ["a.won"]})
    assert failed[-1].skill == "a.won" and failed[-1].demoted == "failed"
    constrained = rank(proposals(), history={"tried": ["a.won"], "won": ["a.won"], "failed": []},
                       constraints={"a.won": "the task allows no library"})
    assert constrained[-1].skill == "a.won" and constrained[-1].demoted == "task"


def test_a_proposal_whose_estimate_the_evidence_computes_as_zero_is_no_candidate():
    # issue 16 (LLM run, reverse_array after mem.vectorize): a static stride (x[n - 1 - i]) the profile shows
    # fully coalesced, 32 of 32 bytes per sector, was estimated at 0 % and still chosen as the round's skill
    from skillbase.engine.ranking import rank

    refuted = dict(skill="mem.coalesce", score=0.5, time_saved_fraction=0.0, rule="static", because="", focus=[])
    assumed = dict(skill="mem.vectorize", score=0.5, time_saved_fraction=None, rule="v", because="", focus=[])
    assert [c.skill for c in rank([refuted, assumed])] == ["mem.vectorize"]
    # another rule that measures a saving for the same skill still proposes it
    measured = dict(refuted, rule="measured", time_saved_fraction=0.2)
    (kept,) = [c for c in rank([refuted, measured]) if c.skill == "mem.coalesce"]
    assert kept.time_saved_fraction == 0.2 and kept.rules == ["measured"]
