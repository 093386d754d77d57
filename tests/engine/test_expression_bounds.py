"""Rule expressions and regexes are bounded (issue 22): length, nesting, and patterns that cannot
backtrack catastrophically; each refusal is an ExpressionError, never a RecursionError or a hang."""

from __future__ import annotations

import time

import pytest

from skillbase.engine import expressions
from skillbase.engine.expressions import ExpressionError, regex_problem

TYPES = {"x": "float", "name": "str"}


@pytest.mark.parametrize("text", [
    "+".join(["x"] * 900) + " > 1",
    "not " * 480 + "true",
    "x > 1 and " * 300 + "true",
    "(" * 1000 + "x" + ")" * 1000 + " > 1",
])
def test_deep_or_long_expressions_are_an_expression_error(text):
    with pytest.raises(ExpressionError, match="too deeply|too complex|characters"):
        expressions.parse(text, TYPES, expect="bool")


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a|aa)*$", r"(.*a){20}", r"(x+x+)+y", "a" * 300])
def test_catastrophic_patterns_are_refused_when_the_rule_loads(pattern):
    assert regex_problem(pattern)
    with pytest.raises(ExpressionError, match="regex"):
        expressions.parse(f'name =~ "{pattern}"', TYPES, expect="bool")


def test_backreferences_are_refused():
    assert regex_problem(r"(a)\1") == "backreferences are not allowed"
    with pytest.raises(ExpressionError, match="backreferences"):
        expressions.parse(r'name =~ "(a)\\1"', TYPES, expect="bool")   # rule-engine reads \\ as one \


def test_a_pattern_read_from_the_evidence_is_refused():
    with pytest.raises(ExpressionError, match="string literal"):
        expressions.parse("name =~ name", TYPES, expect="bool")


@pytest.mark.parametrize("pattern", [r"^sgemm(_v[0-9]+)?$", r"\d+\.\d+", r"(?:ab)*c", r"^(fwd|bwd)_"])
def test_ordinary_patterns_still_work_and_match_quickly(pattern):
    assert regex_problem(pattern) is None
    expression = expressions.parse(f'name =~ "{pattern}"', TYPES, expect="bool")
    start = time.monotonic()
    expression.evaluate({"name": "a" * 50_000 + "!"})
    assert time.monotonic() - start < 1


def test_the_built_in_rules_stay_inside_the_bounds():
    from skillbase.engine.validate import validate

    assert [str(p) for p in validate().problems] == []


@pytest.mark.parametrize("text,expected", [("x < 1e400", True), ("x > -1e400", True), ("1e400 < x", False)])
def test_an_overflowing_literal_evaluates_as_infinity(text, expected):
    """repr(inf) is `inf`, a name the translation does not have (a NameError found by the fuzz suite)."""
    expression = expressions.parse(text, TYPES, expect="bool")
    assert expressions.is_translation(expression.python)
    assert expression.evaluate({"x": 3.0}) is expected


def test_a_fallback_expression_keeps_the_types_of_names_its_reduction_dropped():
    """rule-engine reduces `true ? a : b` to `a` at load, but re-parses the text (with b) when it
    evaluates a regex expression; b's type must still be known (found by the fuzz suite)."""
    types = {"device_name": "str", "dram_pct": "float", "sm_pct": "float"}
    expression = expressions.parse('device_name =~ "^k" ? true : (true ? dram_pct > 1 : sm_pct > 1)', types,
                                   expect="bool")
    assert expression.python is None          # the regex keeps it on rule-engine
    assert expression.evaluate({"device_name": "x", "dram_pct": 2.0}) is True
