"""Every kind of rule-set problem is reported once, as `file:line: message (hint)`, and all are collected."""

from __future__ import annotations

import textwrap

import pytest
from toy_rules import RULES, VOCABULARY, make_ruleset

GOOD_CASES = {
    "derive/bottleneck.memory.cases.yaml": """\
        cases:
          - {name: hot, expect: fire, reason: DRAM at 90% leads SM at 20%., values: {dram_pct: 90, sm_pct: 20}}
          - {name: cold, expect: quiet, reason: Nothing near its peak., values: {dram_pct: 10, sm_pct: 20}}
        """,
}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.mktemp("cache")))


def problems_for(tmp_path, rules=None, vocabulary=VOCABULARY, cases=None, skills=None):
    from skillbase.engine.validate import validate

    root = make_ruleset(tmp_path / "rules", rules=rules, vocabulary=vocabulary, cases=cases)
    known = {"mem.coalesce", "mem.vectorize", "mem.smem_tiling", "mem.aaa_nospeedup"}
    report = validate([root], skill_ids=skills if skills is not None else known)
    return [str(p) for p in report.problems]


def one_rule(text: str, name: str = "propose/r.one.yaml") -> dict[str, str]:
    return {name: text}


def only(problems: list[str], needle: str) -> str:
    found = [p for p in problems if needle in p]
    assert len(found) == 1, problems
    return found[0]


def test_yaml_syntax_error_is_one_line_with_line_and_column(tmp_path):
    problems = problems_for(tmp_path, one_rule("id: r.one\nkind: propose\nwhen: [unclosed\n"))
    line = only(problems, "r.one.yaml")
    assert "\n" not in line and ":4:" in line or ":3:" in line
    assert "fix the YAML syntax" in line


def test_schema_error_names_the_key_with_a_hint(tmp_path):
    text = """\
        id: r.one
        kind: propose
        summary: s
        when: "dram_pct > 1"
        proposes: [{skill: mem.coalesce, score: 1.5}]
        because: b
        """
    line = only(problems_for(tmp_path, one_rule(text)), "score")
    assert "r.one.yaml:5:" in line and "0..1" in line


def test_unknown_top_level_key_gets_did_you_mean(tmp_path):
    text = ("id: r.one\nkind: propose\nsummary: s\nwhen: 'dram_pct > 1'\n"
            "proposes: [{skill: mem.coalesce, score: 0.5}]\nbecuase: b\n")
    problems = problems_for(tmp_path, one_rule(text))
    assert any("did you mean `because`" in p for p in problems), problems


def test_unknown_name_in_a_leaf_gets_did_you_mean_and_its_line(tmp_path):
    text = """\
        id: r.one
        kind: propose
        summary: s
        when:
          all:
            - "dram_pct > 1"
            - "dram_pcnt > 50"
        proposes: [{skill: mem.coalesce, score: 0.5}]
        because: b
        """
    line = only(problems_for(tmp_path, one_rule(text)), "dram_pcnt")
    assert "r.one.yaml:7:" in line and "did you mean `dram_pct`" in line and "when.all[1]" in line


def test_type_error_is_caught_at_load(tmp_path):
    text = ("id: r.one\nkind: propose\nsummary: s\nwhen: 'device_name > 3'\n"
            "proposes: [{skill: mem.coalesce, score: 0.5}]\nbecause: b\n")
    line = only(problems_for(tmp_path, one_rule(text)), "device_name")
    assert "r.one.yaml:4:" in line and "mismatch" in line


def test_condition_must_be_boolean(tmp_path):
    text = ("id: r.one\nkind: propose\nsummary: s\nwhen: 'dram_pct + 1'\n"
            "proposes: [{skill: mem.coalesce, score: 0.5}]\nbecause: b\n")
    line = only(problems_for(tmp_path, one_rule(text)), "expected bool")
    assert "r.one.yaml:4:" in line


def test_unknown_skill_and_duplicate_rule_id(tmp_path):
    rules = dict(RULES)
    rules["propose/x.tile.yaml"] = RULES["propose/x.tile.yaml"]
    rules["derive/x.tile.yaml"] = RULES["propose/x.tile.yaml"]
    problems = problems_for(tmp_path, rules, skills={"mem.coalesce", "mem.vectorize", "mem.aaa_nospeedup"})
    assert any("unknown skill `mem.smem_tiling`" in p for p in problems), problems
    assert any("duplicate rule id `x.tile`" in p for p in problems), problems


def test_rule_id_must_match_file_name(tmp_path):
    text = ("id: r.other\nkind: propose\nsummary: s\nwhen: 'dram_pct > 1'\n"
            "proposes: [{skill: mem.coalesce, score: 0.5}]\nbecause: b\n")
    line = only(problems_for(tmp_path, one_rule(text)), "differs from its file name")
    assert "r.one.yaml:1:" in line


@pytest.mark.parametrize("leaves, clash", [
    (['"dram_pct > 5"', '"dram_pct < 3"'], True),
    (['"dram_pct >= 5"', '"dram_pct < 5"'], True),
    (['"dram_pct >= 5"', '"dram_pct <= 5"'], False),
    (['"5 < dram_pct"', '"dram_pct < 4"'], True),
    (['"dram_pct == 5"', '"dram_pct != 5"'], True),
    (['"device_name == \\"A\\""', '"device_name == \\"B\\""'], True),
    (['"dram_pct > sm_pct"', '"sm_pct > dram_pct"'], False),  # different keys: not analysed, no false alarm
    (['"dram_pct > 5"', '{all: ["dram_pct < 1"]}'], True),
    (['"dram_pct > 5"', '{any: ["dram_pct < 1", "sm_pct > 1"]}'], False),
])
def test_unsatisfiable_intervals(tmp_path, leaves, clash):
    body = "\n".join(f"    - {leaf}" for leaf in leaves)
    text = (f"id: r.one\nkind: propose\nsummary: s\nwhen:\n  all:\n{body}\n"
            f"proposes: [{{skill: mem.coalesce, score: 0.5}}]\nbecause: b\n")
    problems = [p for p in problems_for(tmp_path, one_rule(text)) if "can never be true" in p]
    assert bool(problems) == clash, problems
    if clash:
        assert "r.one.yaml:5:" in problems[0]


def test_leaf_with_its_negation(tmp_path):
    text = ("id: r.one\nkind: propose\nsummary: s\nwhen:\n  all:\n    - 'dram_pct > sm_pct * 2'\n"
            "    - not: 'dram_pct  >  sm_pct * 2'\nproposes: [{skill: mem.coalesce, score: 0.5}]\nbecause: b\n")
    assert any("and its negation" in p for p in problems_for(tmp_path, one_rule(text)))


def test_vocabulary_problems(tmp_path):
    vocab = VOCABULARY + textwrap.dedent("""\
        bad_metric:
          type: float
          unit: none
          source: {ncu: "DRAM Throughput"}
          meaning: A section label, not a metric name.
        loop_a:
          type: float
          unit: none
          source: {derived: "loop_b + 1"}
          meaning: cycle.
        loop_b:
          type: float
          unit: none
          source: {derived: "loop_a * 2"}
          meaning: cycle.
        typo_ref:
          type: float
          unit: none
          source: {derived: "dram_pt * 2"}
          meaning: unknown name.
        wrong_type:
          type: bool
          unit: none
          source: {derived: "dram_pct * 2"}
          meaning: a float declared bool.
        missing_threshold:
          type: float
          unit: none
          source: {threshold: sol_hihg}
          meaning: not in the thresholds file.
        no_type:
          source: {ncu: sm__cycles_active.avg}
          meaning: type is required.
        """)
    problems = problems_for(tmp_path, vocabulary=vocab)
    assert any("`DRAM Throughput` is not an ncu metric name" in p for p in problems), problems
    assert any("cycle: loop_a -> loop_b -> loop_a" in p for p in problems), problems
    assert any("did you mean `dram_pct`" in p and "typo_ref" in p for p in problems), problems
    assert any("wrong_type" in p and "expected bool" in p for p in problems), problems
    assert any("sol_hihg" in p and "did you mean `sol_high`" in p for p in problems), problems
    assert any("`no_type`: 'type' is required" in p for p in problems), problems
    assert all(p.count("\n") == 0 for p in problems)


def test_derivation_rule_cycle(tmp_path):
    rules = {
        "derive/f.one.yaml": "id: f.one\nkind: derive\nsummary: s\nwhen: 'hot'\nderives: {bottleneck: X}\nbecause: b\n",
        "derive/f.two.yaml": "id: f.two\nkind: derive\nsummary: s\nwhen: 'memory_bound'\nderives: {hot: true}\n"
                             "because: b\n",
    }
    line = only(problems_for(tmp_path, rules), "form a cycle")
    assert "f.one -> f.two -> f.one" in line or "f.two -> f.one -> f.two" in line


def test_derives_unknown_fact_and_wrong_literal_type(tmp_path):
    rules = {"derive/f.one.yaml": "id: f.one\nkind: derive\nsummary: s\nwhen: 'dram_pct > 1'\n"
                                  "derives: {bottlenek: X, hot: maybe}\nbecause: b\n"}
    problems = problems_for(tmp_path, rules)
    assert any("`bottlenek` is not a fact" in p and "did you mean `bottleneck`" in p for p in problems), problems
    assert any("`hot` is bool" in p for p in problems), problems


def test_because_with_unknown_name(tmp_path):
    text = ("id: r.one\nkind: propose\nsummary: s\nwhen: 'dram_pct > 1'\n"
            "proposes: [{skill: mem.coalesce, score: 0.5}]\nbecause: 'at {dram_pcnt:.0f}%'\n")
    assert any("`because` reads unknown name `dram_pcnt`" in p for p in problems_for(tmp_path, one_rule(text)))


def test_cases_required_with_fire_and_quiet_and_reasons(tmp_path):
    cases = {
        "derive/bottleneck.memory.cases.yaml": "cases:\n"
                                               "  - {name: a, expect: fire, reason: r, values: {dram_pct: 90}}\n",
        "propose/x.tile.cases.yaml": "cases:\n  - {name: a, expect: fire, values: {}}\n",
        "propose/x.coalesce.cases.yaml": "cases:\n  - {name: a, expect: fire, reason: r, fixture: nowhere}\n"
                                         "  - {name: b, expect: quiet, reason: r, values: {dram_pcnt: 1}}\n",
    }
    problems = problems_for(tmp_path, cases=cases)
    no_quiet = "bottleneck.memory.cases.yaml:1: rule `bottleneck.memory` has no `expect: quiet` case"
    assert any(no_quiet in p for p in problems), problems
    assert any("x.tile.cases.yaml:2:" in p and "'reason' is required" in p for p in problems), problems
    assert any("rule `a.hot` has no cases file" in p for p in problems), problems
    assert any("fixture `nowhere` not found" in p for p in problems), problems
    assert any("sets unknown name `dram_pcnt`" in p and "did you mean `dram_pct`" in p for p in problems), problems


def test_problems_are_all_collected_not_just_the_first(tmp_path):
    rules = dict(RULES)
    rules["propose/r.one.yaml"] = ("id: r.one\nkind: propose\nsummary: s\nwhen: 'nope > 1'\n"
                                   "proposes: [{skill: mem.coalesce, score: 0.5}]\nbecause: b\n")
    rules["propose/r.two.yaml"] = ("id: r.two\nkind: propose\nsummary: s\nwhen: 'nada > 1'\n"
                                   "proposes: [{skill: mem.coalesce, score: 0.5}]\nbecause: b\n")
    problems = problems_for(tmp_path, rules)
    assert any("`nope`" in p for p in problems) and any("`nada`" in p for p in problems)


def test_engine_load_refuses_a_broken_set_with_one_line(tmp_path):
    from skillbase.engine import Engine
    from skillbase.errors import InputError

    rules = {"propose/r.one.yaml": "id: r.one\nkind: propose\nsummary: s\nwhen: 'nope > 1'\n"
                                   "proposes: [{skill: mem.coalesce, score: 0.5}]\nbecause: b\n"}
    with pytest.raises(InputError) as caught:
        Engine.load([make_ruleset(tmp_path / "rules", rules=rules)])
    assert "rule set has errors" in caught.value.message and "\n" not in caught.value.message
    assert "rules validate" in caught.value.hint
