"""`because` templates (issue 22): bare vocabulary names and a few number formats only, checked by
`rules validate` with file:line and again when rendered; a template can never reach an object's
attributes (str.format walked `{x.__class__...}` to os.environ) nor build an unbounded string."""

from __future__ import annotations

import pytest
from toy_rules import M, evidence, make_ruleset

from skillbase.engine import because
from skillbase.engine.trace import render_because

HOSTILE = [
    "{dram_pct.__class__.__init__.__globals__}",
    "{dram_pct[0]}",
    "{dram_pct!r}",
    "{dram_pct:>1000000000}",
    "{dram_pct:{sm_pct}}",
    "{}",
    "{0}",
    "{dram_pct",
    "dram_pct}",
]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path_factory.mktemp("cache")))


def rule_with(template: str) -> dict[str, str]:
    quoted = template.replace("'", "''")
    return {"propose/r.one.yaml": ("id: r.one\nkind: propose\nsummary: s\nwhen: 'dram_pct > 1'\n"
                                   "proposes: [{skill: mem.coalesce, score: 0.5}]\n"
                                   f"because: '{quoted}'\n")}


@pytest.mark.parametrize("template", HOSTILE)
def test_parse_refuses_everything_but_bare_names_and_whitelisted_specs(template):
    with pytest.raises(because.TemplateError):
        because.parse(template)


@pytest.mark.parametrize("template", HOSTILE)
def test_rules_validate_reports_each_hostile_template_at_its_line(tmp_path, template):
    from skillbase.engine.validate import validate

    root = make_ruleset(tmp_path / "rules", rules=rule_with(template))
    problems = [str(p) for p in validate([root], skill_ids={"mem.coalesce"}).problems]
    found = [p for p in problems if "r.one.yaml:6:" in p and "because" in p]
    assert len(found) == 1, problems


def test_the_built_in_specs_parse_and_format_like_python():
    parts = because.parse("DRAM {a:.0f}% of {b:.2f}, {c:.0%} {d:,} {e:g} {{literal}}")
    assert [p.spec for p in parts if isinstance(p, because.Field)] == [".0f", ".2f", ".0%", ",", "g"]
    text = because.fill("DRAM {a:.0f}% of {b:.2f}, {c:.0%} {d:,} {e:g} {{literal}}",
                        {"a": 91.4, "b": 0.125, "c": 0.5, "d": 1234567, "e": 1e-9})
    assert text == "DRAM 91% of 0.12, 50% 1,234,567 1e-09 {literal}"


def test_values_are_formatted_by_the_engine_and_bounded():
    assert because.fill("{x:d}", {"x": 2.5}) == "2.5"             # a spec that does not fit prints plainly
    assert len(because.fill("{x}", {"x": "k" * 10_000})) == because.MAX_VALUE_CHARS
    assert because.fill("{x}", {"x": 10 ** 5000}) == "<a very large number>"
    assert len(because.fill("{x}" * 300, {"x": "y" * 100})) <= because.MAX_RENDERED_CHARS
    with pytest.raises(because.TemplateError, match="characters long"):
        because.parse("x" * (because.MAX_TEMPLATE_CHARS + 1))


def test_render_time_check_holds_for_a_rule_that_skipped_validation(tmp_path, monkeypatch):
    """A Rule built in code (never validated) with a hostile template renders a note, not the secret."""
    from dataclasses import replace

    from skillbase.engine import Engine

    monkeypatch.setenv("SKILLBASE_TEST_SECRET", "s3cret-value")
    engine = Engine.load([make_ruleset(tmp_path / "rules")])
    rule = engine.rule("x.coalesce-weak")
    walk = "{dram_pct.__class__.__init__.__globals__[os].environ[SKILLBASE_TEST_SECRET]}"
    hostile = replace(rule, because=walk, because_names=("dram_pct",))
    result = engine.evaluate(evidence({M["dram"]: 91.4, M["sm"]: 20.0}), rules=[hostile])
    text = result.decision("x.coalesce-weak").because
    assert "s3cret" not in text and "not rendered" in text
    assert "s3cret" not in render_because(walk, {"dram_pct": 1.0})
