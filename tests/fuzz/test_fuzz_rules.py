"""Fuzzed rules: `because` templates, rule expressions (with regexes) and whole rule files. Each is
accepted or reported as a problem, never a traceback or a hang, and a template never reaches into
the program (a secret in the environment never shows up in what it renders)."""

from __future__ import annotations

from fuzz_kit import examples, snapshot, survive, unchanged
from hypothesis import given
from hypothesis import strategies as st
from toy_rules import make_ruleset

from skillbase.engine import because, expressions

SECRET = "fuzz-secret-4711"
NAMES = ["dram_pct", "sm_pct", "registers", "device_name", "has_atomics", "x", "__class__", "_", "a1"]
TYPES = {"dram_pct": "float", "sm_pct": "float", "registers": "int", "device_name": "str", "has_atomics": "bool"}
TEMPLATE_PIECES = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["{", "}", "{{", "}}", ":", "!r", "!s", "[0]", ".__class__", ".__globals__", "__init__",
                     ">1000000000", ".2f", ".0%", ",", "g", "d", "{0}", "{}", "{dram_pct:{sm_pct}}"]),
    st.sampled_from(NAMES).map(lambda n: "{" + n + "}"),
)
TOKENS = st.sampled_from([
    "dram_pct", "sm_pct", "registers", "device_name", "has_atomics", "unknown_name", "1", "0", "-1", "1e400",
    "3.5", "'text'", '"(a+)+$"', '"^sgemm_[0-9]+$"', '"(a|aa)*"', "true", "false", "null", "and", "or", "not",
    "+", "-", "*", "/", "//", "%", "**", "==", "!=", "<", "<=", ">", ">=", "=~", "=~~", "!~", "in", "?", ":",
    "(", ")", "[", "]", ",", "$max", "$min", "$abs", "$sum", ".", "::", "\\", "'", "\x00",
])


@examples(300)
@given(pieces=st.lists(TEMPLATE_PIECES, max_size=12),
       values=st.dictionaries(st.sampled_from(NAMES), st.one_of(st.integers(), st.floats(), st.text(max_size=30),
                                                                st.booleans(), st.none()), max_size=6))
def test_templates_parse_or_refuse_and_render_bounded_without_secrets(monkeypatch, pieces, values):
    monkeypatch.setenv("SKILLBASE_FUZZ_SECRET", SECRET)
    template = "".join(pieces)
    survive("because template", lambda: because.parse(template))
    rendered = survive("because render", lambda: because.fill(template, values))
    assert isinstance(rendered, str) and len(rendered) <= because.MAX_RENDERED_CHARS and SECRET not in rendered


ATOMS = st.one_of(st.sampled_from(["dram_pct", "sm_pct", "registers", "has_atomics", "unknown_name", "true", "null"]),
                  st.floats(allow_nan=False, allow_infinity=False).map(repr), st.integers(-10**30, 10**30).map(str))
PATTERNS = st.lists(st.sampled_from(["a", "b", ".", "*", "+", "?", "(", ")", "|", "[0-9]", "\\d", "{2,}", "^", "$",
                                     "(?:", "\\1"]), max_size=12).map("".join)
EXPRESSIONS = st.recursive(ATOMS, lambda inner: st.one_of(
    st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "==", "<", ">=", "and", "or"]), inner)
    .map(" ".join),
    inner.map(lambda e: f"({e})"), inner.map(lambda e: f"not {e}"),
    st.lists(inner, min_size=1, max_size=3).map(lambda es: f"$max([{', '.join(es)}])"),
    st.tuples(inner, inner, inner).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
    PATTERNS.map(lambda p: f"device_name =~ {p!r}".replace("'", '"'))), max_leaves=40)


@examples(300)
@given(tokens=st.one_of(st.lists(TOKENS, min_size=1, max_size=25).map(" ".join), EXPRESSIONS),
       repeat=st.integers(1, 60))
def test_expressions_parse_or_are_one_expression_error(tokens, repeat):
    text = tokens if len(tokens) > 40 else " and ".join([tokens] * repeat)
    parsed = survive("rule expression", lambda: expressions.parse(text, TYPES, expect="bool"))
    if isinstance(parsed, expressions.Expression):
        values = {"dram_pct": 91.0, "sm_pct": 20.0, "registers": 32, "device_name": "a" * 20_000 + "!",
                  "has_atomics": False}
        survive("expression evaluate", lambda: _evaluate(parsed, values))


def _evaluate(expression, values):
    try:
        return expression.evaluate(values)
    except expressions.EVALUATION_ERRORS:
        return None   # an unlucky value is missing for the engine (division by zero, overflow)


@examples(100)
@given(when=st.lists(TOKENS, min_size=1, max_size=12).map(" ".join),
       because_text=st.lists(TEMPLATE_PIECES, max_size=8).map("".join),
       extra=st.sampled_from(["", "score: 2\n", "speedup: '$max([dram_pct'\n", "status: weird\n",
                              "derives: {bottleneck: {expr: 'dram_pct'}}\n", "when: again\n"]))
def test_rule_files_validate_to_problems_not_tracebacks(tmp_path_factory, when, because_text, extra):
    from skillbase.engine.validate import validate

    root = tmp_path_factory.mktemp("rules")
    rule = ("id: r.fuzz\nkind: propose\nsummary: s\n"
            f"when: {when!r}\n".replace("\\x00", "") + "proposes: [{skill: mem.coalesce, score: 0.5}]\n"
            f"because: {because_text!r}\n" + extra)
    make_ruleset(root, rules={"propose/r.fuzz.yaml": rule})
    before = snapshot(root)
    survive("rule file", lambda: validate([root], skill_ids={"mem.coalesce"}))
    unchanged(before, snapshot(root))
