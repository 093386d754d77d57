"""Rule cases run, and can fail: the mutation meta-test replaces each rule's `when` with a
constant and requires some case to notice (a rule whose cases pass whatever it says is untested)."""

from __future__ import annotations

import pytest
from toy_rules import CASES, FIXTURE, make_ruleset


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def ruleset(tmp_path):
    import json

    root = make_ruleset(tmp_path / "rules", cases=CASES)
    (root / "fixtures" / "membound.evidence.json").write_text(json.dumps(FIXTURE))
    return root


def test_cases_pass_and_fail_with_reasons(ruleset):
    from skillbase.engine import Engine
    from skillbase.engine.cases import run_all

    results, problems = run_all(Engine.load([ruleset]))
    assert problems == []
    outcome = {(r.case.rule, r.case.name): r for r in results}
    assert len(outcome) == 12
    assert all(r.passed for key, r in outcome.items() if key != ("x.tile", "wrong"))
    wrong = outcome[("x.tile", "wrong")]
    assert not wrong.passed and wrong.fired is True
    assert wrong.failed_leaves == ["when: dram_pct > 10 -> true (dram_pct=50)"]
    assert outcome[("bottleneck.memory", "no-sm")].result == "missing"


def test_run_one_rule_and_unknown_rule(ruleset):
    from skillbase.engine import Engine
    from skillbase.engine.cases import run_all
    from skillbase.errors import InputError

    engine = Engine.load([ruleset])
    results, _ = run_all(engine, ["x.coalesce"])
    assert {r.case.rule for r in results} == {"x.coalesce"}
    with pytest.raises(InputError, match="did you mean `x.coalesce`"):
        run_all(engine, ["x.coalesc"])


def _mutation_survivors(engine) -> list[str]:
    """Rules whose cases all still pass when `when` is replaced by a constant (true, then false)."""
    from skillbase.engine.cases import FixtureLoader, load_cases, run_case

    fixtures = FixtureLoader(engine.rules_dirs)
    survivors = []
    for rule in engine.rules:
        cases, _ = load_cases(rule)
        if not cases:
            continue  # `rules validate` reports rules without cases
        for constant in (False, True):
            mutant = rule.with_constant_when(constant)
            if all(run_case(engine, mutant, case, fixtures).passed for case in cases):
                survivors.append(f"{rule.id} (when: {str(constant).lower()})")
    return survivors


def test_mutation_meta_test_on_own_rules(ruleset):
    from skillbase.engine import Engine

    assert _mutation_survivors(Engine.load([ruleset])) == []


def test_mutation_meta_test_detects_untested_rule(tmp_path):
    from skillbase.engine import Engine

    cases = dict(CASES)
    cases["propose/x.tile.cases.yaml"] = ("cases:\n  - {name: a, expect: fire, reason: fires, values: {dram_pct: 50}}\n"
                                          "  - {name: b, expect: quiet, reason: quiet only because a name is misspelt,"
                                          " values: {sm_pct: 50}}\n")
    engine = Engine.load([make_ruleset(tmp_path / "r", cases=cases)])
    # the quiet case leaves dram_pct missing, so it stays quiet whatever the rule says... unless
    # the rule is `true`: the mutant fires and the case fails, as it should. With `when: false`
    # the fire case fails. So this rule is killed both ways; weaken it further:
    cases["propose/x.tile.cases.yaml"] = "cases:\n  - {name: a, expect: fire, reason: fires, values: {dram_pct: 50}}\n"
    engine = Engine.load([make_ruleset(tmp_path / "r2", cases=cases)])
    assert "x.tile (when: true)" in _mutation_survivors(engine)


def test_mutation_meta_test_on_builtin_rules():
    from skillbase.engine import Engine
    from skillbase.engine.evaluate import resolve_dirs
    from skillbase.engine.vocabulary import default_thresholds_path

    dirs = resolve_dirs(None)
    engine, _ = Engine.build(dirs, default_thresholds_path(dirs))  # rules that load, even mid-edit
    if not engine.rules:
        pytest.skip("no built-in rules yet")
    assert _mutation_survivors(engine) == []
