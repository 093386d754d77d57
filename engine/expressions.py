"""Rule expressions: parsed and type-checked by `rule-engine`, evaluated as compiled Python.

`rule-engine` gives us the grammar, the typed parse (a type error is caught when the rule is
loaded, not when a kernel happens to reach it) and an AST from which the referenced symbols are
read. Evaluating through rule-engine costs 15-30 us per expression and importing it costs ~0.3 s
(it builds its parser tables at import), which would break `advise`'s one-second budget. So each
parsed AST is translated once into an equivalent Python expression; the translations are cached
with the rule set (engine/cache.py) and `advise` never imports rule-engine. Nodes we do not
translate (regex matches, bitwise ops, datetimes, comprehensions…) fall back to rule-engine at run
time, so every valid rule-engine expression still works. tests/test_engine_expressions.py checks
the translation against rule-engine on every built-in expression.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from skillbase.datafile.problems import did_you_mean
from skillbase.errors import InputError

# vocabulary type -> rule-engine DataType name
RE_TYPES = {"float": "FLOAT", "int": "FLOAT", "bool": "BOOLEAN", "str": "STRING"}
# rule-engine result DataType name -> the vocabulary types it can feed
_RESULT_TYPES = {"FLOAT": {"float", "int"}, "BOOLEAN": {"bool"}, "STRING": {"str"}}

_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_ARITH = {"add": "+", "sub": "-", "mul": "*", "tdiv": "/", "fdiv": "//", "mod": "%", "pow": "**"}
_BUILTINS = {"max": "_max", "min": "_min", "abs": "_abs", "sum": "_sum"}
_CONSTANTS = {"e": repr(math.e), "pi": repr(math.pi)}


class ExpressionError(InputError):
    """An expression that does not parse, reads an unknown name or mixes types."""

    def __init__(self, message: str, hint: str | None = None, symbol: str | None = None):
        super().__init__(message, hint)
        self.symbol = symbol


class Untranslatable(Exception):
    """An AST node with no Python translation; the expression falls back to rule-engine."""


class EvaluationFailed(ValueError):
    """rule-engine could not compute an expression for these values (its own error, re-raised as ours)."""


# What evaluating an expression may raise for unlucky values (division by zero, overflow, `$max([])`,
# comparing a string with a number, a rule-engine evaluation error): the value is then unknown.
EVALUATION_ERRORS = (ArithmeticError, ValueError, TypeError)
UNDECLARED_HINT = "every name must be declared in rules/vocabulary.yaml"


def unknown_name_hint(name: str, names) -> str:
    """The hint for a name the vocabulary does not declare: the closest declared names, else where to declare it."""
    return did_you_mean(name, names, n=3) or UNDECLARED_HINT


@dataclass
class Comparison:
    """A leaf of the form `name OP literal|name` (name on the left), for focus rows and interval checks."""

    name: str
    op: str  # one of < <= > >= == !=
    literal: Any = None  # the constant compared with, when the other side is a literal
    other: str | None = None  # the name compared with, when the other side is a symbol


@dataclass
class Expression:
    """One parsed expression: its text, the names it reads, its type and its Python translation."""

    text: str
    symbols: tuple[str, ...]
    result_type: str  # FLOAT | BOOLEAN | STRING | NULL | other rule-engine type names
    python: str | None  # Python source over `v` (a dict of the symbols' values); None -> rule-engine
    comparison: Comparison | None = None
    _fn: Callable[[dict[str, Any]], Any] | None = field(default=None, repr=False, compare=False)
    _types: dict[str, str] | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_fn"] = None  # compiled code is rebuilt after unpickling (see compile_all)
        return state

    def evaluate(self, values: dict[str, Any]) -> Any:
        """Value of the expression; `values` must hold every symbol (the caller handles missing)."""
        fn = self._fn
        if fn is None:
            fn = self._fn = self._build()
        return fn(values)

    def _build(self) -> Callable[[dict[str, Any]], Any]:
        if self.python is not None:
            return eval(compile(f"lambda v: {self.python}", f"<rule expression {self.text!r}>", "eval"), _GLOBALS)  # noqa: S307 - our own translation
        return _rule_engine_evaluator(self.text, self._types or {})


def compile_all(expressions: list[Expression]) -> None:
    """Compile many translations in one `compile` call (much cheaper than one call each)."""
    todo = [e for e in expressions if e._fn is None and e.python is not None]
    if not todo:
        return
    source = "(" + ",\n".join(f"lambda v: {e.python}" for e in todo) + ",)"
    functions = eval(compile(source, "<rule expressions>", "eval"), _GLOBALS)  # noqa: S307 - our own translation
    for expression, fn in zip(todo, functions, strict=True):
        expression._fn = fn


def _max(items):
    return max(items)


def _min(items):
    return min(items)


def _abs(x):
    return abs(x)


def _sum(items):
    return sum(items)


_GLOBALS = {"__builtins__": {}, "bool": bool, "_max": _max, "_min": _min, "_abs": _abs, "_sum": _sum}


def _rule_engine_evaluator(text: str, types: dict[str, str]) -> Callable[[dict[str, Any]], Any]:
    import rule_engine

    try:
        rule = _rule_engine_parse(text, types)
    except rule_engine.errors.EngineError as error:   # parsed once at load; a cached copy may differ
        raise EvaluationFailed(f"{text}: {error.message}") from None

    def evaluate(values: dict[str, Any]) -> Any:
        try:
            result = rule.evaluate(values)
        except rule_engine.errors.EngineError as error:
            raise EvaluationFailed(f"{text}: {error.message}") from None
        # rule-engine computes with Decimal; the rest of the engine speaks float
        return float(result) if type(result).__name__ == "Decimal" else result

    return evaluate


def _rule_engine_parse(text: str, types: dict[str, str]):
    import rule_engine  # lazy: ~0.3 s import, only needed when (re)parsing rules

    resolver = rule_engine.type_resolver_from_dict(
        {name: getattr(rule_engine.DataType, RE_TYPES.get(t, "UNDEFINED")) for name, t in types.items()}
    )
    context = rule_engine.Context(type_resolver=resolver)
    return rule_engine.Rule(text, context=context)


def parse(text: str, types: dict[str, str], expect: str | None = None) -> Expression:
    """Parse and type-check `text` against `types` ({name: float|int|bool|str}).

    `expect` is the vocabulary type the result must have (bool for conditions, float for
    speedups, the fact's type for derived values). Raises ExpressionError with a hint.
    """

    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("empty expression", "write a rule-engine expression such as `mem_pct >= 60`")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"expression of {len(text)} characters (at most {MAX_EXPRESSION_CHARS})", _SPLIT_HINT)
    try:
        return _parse_bounded(text, types, expect)
    # rule-engine's reducer, our translator and Python's compiler all recurse over the tree
    except (RecursionError, MemoryError):
        raise ExpressionError(f"expression nested too deeply: `{text[:60]}…`", _SPLIT_HINT) from None


MAX_EXPRESSION_CHARS = 2000
MAX_REGEX_CHARS = 200
_SPLIT_HINT = "split it into derived vocabulary names or several leaves under all:/any:"


def _parse_bounded(text: str, types: dict[str, str], expect: str | None) -> Expression:
    import rule_engine

    try:
        rule = _rule_engine_parse(text, types)
    except rule_engine.errors.SymbolResolutionError as error:
        name = error.symbol_name
        raise ExpressionError(f"unknown name `{name}` in `{text}`", unknown_name_hint(name, types),
                              symbol=name) from None
    except rule_engine.errors.RuleSyntaxError as error:
        token = getattr(error, "token", None)
        near = f" near `{token.value}`" if token is not None and getattr(token, "value", None) else ""
        syntax = "rule-engine syntax: and/or/not, == != < <= > >=, a ? b : c, x in [..], $max([..])"
        raise ExpressionError(f"syntax error{near} in `{text}`", syntax) from None
    except rule_engine.errors.EvaluationError as error:
        # rule-engine reports type errors found while reducing the typed AST as EvaluationError
        raise ExpressionError(f"{error.message} in `{text}`", _type_hint(text, types)) from None
    except rule_engine.errors.EngineError as error:
        raise ExpressionError(f"{error.message} in `{text}`") from None
    root = rule.statement.expression
    symbols: set[str] = set()
    _collect_symbols(root, symbols)
    result_type = getattr(getattr(root, "result_type", None), "name", "UNDEFINED")
    known = result_type not in ("UNDEFINED", "NULL")
    if expect is not None and known and expect not in _RESULT_TYPES.get(result_type, ()):
        raise ExpressionError(
            f"`{text}` is {result_type.lower()}, expected {expect}",
            "a condition must compare something (e.g. `x > 3`)" if expect == "bool"
            else f"make the expression yield a {expect}",
        )
    for pattern in _regex_operands(root, text):
        problem = regex_problem(pattern)
        if problem:
            raise ExpressionError(f"regex {pattern[:60]!r} in `{text[:80]}`: {problem}",
                                  "use a simpler pattern: no repeat inside a repeat, no alternatives under "
                                  "a repeat, no backreferences")
    try:
        python = _translate(root)
        compile(python, "<rule expression>", "eval")   # Python's compiler has its own nesting limits
    except Untranslatable:
        python = None
    except (SyntaxError, ValueError) as error:
        raise ExpressionError(f"expression too complex ({error.msg if isinstance(error, SyntaxError) else error})",
                              _SPLIT_HINT) from None
    expression = Expression(text=text, symbols=tuple(sorted(symbols)), result_type=result_type, python=python,
                            comparison=_comparison(root))
    # rule-engine re-parses a fallback expression at run time, before reducing it: every name the
    # text mentions needs its type then, not only those left after reduction (`true ? a : b` keeps a)
    expression._types = {name: type_ for name, type_ in types.items() if name in text}
    return expression


def _regex_operands(root, text: str) -> list[str]:
    """The patterns of every `=~` / `=~~` / `!~` / `!~~` in the tree; a pattern must be a string literal
    (one read from the evidence could be anything)."""
    found: list[str] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if type(node).__name__ == "FuzzyComparisonExpression":
            if type(node.right).__name__ != "StringExpression":
                raise ExpressionError(f"the pattern of a regex match must be a string literal in `{text[:80]}`",
                                      "write the pattern in quotes: name =~ \"^sgemm\"")
            found.append(str(node.right.value))
        for attr in ("left", "right", "condition", "case_true", "case_false", "member", "container", "expression",
                     "object", "start", "stop"):
            child = getattr(node, attr, None)
            if child is not None and hasattr(child, "evaluate"):
                stack.append(child)
        for attr in ("arguments", "value"):
            children = getattr(node, attr, None)
            if isinstance(children, (list, tuple)):
                stack.extend(c for c in children if hasattr(c, "evaluate"))
    return found


def regex_problem(pattern: str) -> str | None:
    """Why `pattern` could backtrack catastrophically (or not parse), None when it cannot.

    Python's `re` backtracks, and patterns run over strings from evidence files anyone may send,
    so a rule may only use patterns of star height one: no repeat inside a repeat (`(a+)+`), no
    alternatives under a repeat (`(a|aa)*`), no backreferences; and at most MAX_REGEX_CHARS long."""
    import re._constants as c  # noqa: PLC2701 - the stdlib's own regex parser is the only exact reader
    import re._parser as sre  # noqa: PLC2701

    if len(pattern) > MAX_REGEX_CHARS:
        return f"longer than {MAX_REGEX_CHARS} characters"
    try:
        parsed = sre.parse(pattern)
    except (re.error, RecursionError, OverflowError) as error:
        return f"not a valid regex ({error})"
    repeats = (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", c.MAX_REPEAT))
    stack = [(parsed, False)]
    while stack:
        items, repeated = stack.pop()
        for op, av in items:
            if op in repeats:
                low, high, sub = av
                many = high is c.MAXREPEAT or high > 1
                if many and repeated:
                    return "a repeat inside a repeat can backtrack exponentially"
                stack.append((sub, repeated or many))
            elif op is c.BRANCH:
                if repeated:
                    return "alternatives under a repeat can backtrack exponentially"
                stack.extend((branch, repeated) for branch in av[1])
            elif op in (c.GROUPREF, c.GROUPREF_EXISTS):
                return "backreferences are not allowed"
            elif op is c.SUBPATTERN:
                stack.append((av[-1], repeated))
            elif op in (c.ASSERT, c.ASSERT_NOT):
                stack.append((av[1], repeated))
            elif op is getattr(c, "ATOMIC_GROUP", None):
                stack.append((av, repeated))
    return None


def _type_hint(text: str, types: dict[str, str]) -> str:
    mentioned = [f"{n}: {t}" for n, t in sorted(types.items()) if n in text]
    return "types: " + ", ".join(mentioned[:6]) if mentioned else "check the operand types"


def _collect_symbols(node, out: set[str]) -> None:
    import rule_engine.ast as ast

    if isinstance(node, ast.SymbolExpression):
        if node.scope is None:
            out.add(node.name)
        return
    for attr in ("left", "right", "condition", "case_true", "case_false", "member", "container",
                 "function", "expression", "object", "container", "start", "stop"):
        child = getattr(node, attr, None)
        if isinstance(child, ast.ExpressionBase):
            _collect_symbols(child, out)
    for attr in ("arguments", "value"):
        children = getattr(node, attr, None)
        if isinstance(children, (list, tuple)):
            for child in children:
                if isinstance(child, ast.ExpressionBase):
                    _collect_symbols(child, out)
                elif isinstance(child, tuple):  # mapping literals hold (key, value) pairs
                    for part in child:
                        if isinstance(part, ast.ExpressionBase):
                            _collect_symbols(part, out)


def _translate(node) -> str:
    import rule_engine.ast as ast

    kind = type(node).__name__
    if kind == "LogicExpression":
        op = {"and": "and", "or": "or"}.get(node.type)
        if op is None:
            raise Untranslatable(kind)
        return f"(bool({_translate(node.left)}) {op} bool({_translate(node.right)}))"
    if kind in ("ComparisonExpression", "ArithmeticComparisonExpression"):
        op = _COMPARE.get(node.type)
        if op is None:
            raise Untranslatable(node.type)
        return f"({_translate(node.left)} {op} {_translate(node.right)})"
    if kind in ("ArithmeticExpression", "AddExpression", "SubtractExpression"):
        op = _ARITH.get(node.type)
        if op is None:
            raise Untranslatable(node.type)
        return f"({_translate(node.left)} {op} {_translate(node.right)})"
    if kind == "UnaryExpression":
        if node.type == "not":
            return f"(not {_translate(node.right)})"
        if node.type == "uminus":
            return f"(-{_translate(node.right)})"
        raise Untranslatable(node.type)
    if kind == "TernaryExpression":
        return f"({_translate(node.case_true)} if {_translate(node.condition)} else {_translate(node.case_false)})"
    if kind == "ContainsExpression":
        return f"({_translate(node.member)} in {_translate(node.container)})"
    if kind == "SymbolExpression":
        if node.scope is None:
            return f"v[{node.name!r}]"
        if node.name in _CONSTANTS:
            return _CONSTANTS[node.name]
        raise Untranslatable(node.name)
    if kind == "FunctionCallExpression":
        function = node.function
        if isinstance(function, ast.SymbolExpression) and function.scope == "built-in" and function.name in _BUILTINS:
            args = ", ".join(_translate(a) for a in node.arguments)
            return f"{_BUILTINS[function.name]}({args})"
        raise Untranslatable("function")
    if kind == "FloatExpression":
        return _float_literal(float(node.value))
    if kind == "StringExpression":
        return repr(str(node.value))
    if kind == "BooleanExpression":
        return "True" if node.value else "False"
    if kind == "NullExpression":
        return "None"
    if kind == "ArrayExpression":
        items = [_translate(item) for item in node.value]
        return "(" + "".join(f"{item}, " for item in items) + ")"
    raise Untranslatable(kind)


_SAFE_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div,
               ast.FloorDiv, ast.Mod, ast.Pow, ast.UnaryOp, ast.Not, ast.USub, ast.Compare, ast.Eq, ast.NotEq,
               ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.IfExp, ast.Constant, ast.Tuple, ast.Load,
               ast.Subscript, ast.Name, ast.Call)
_SAFE_NAMES = {"v", "bool", *_BUILTINS.values()}


def is_translation(python: str) -> bool:
    """Whether `python` lies inside the grammar `_translate` writes: names read as v['name'], literals,
    operators and the four helpers. A translation read back from the rule cache is checked with this
    before it is compiled, so a planted cache file cannot run code of its own."""
    try:
        tree = ast.parse(python, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for node in ast.walk(tree):
        if not isinstance(node, _SAFE_NODES):
            return False
        if isinstance(node, ast.Name) and node.id not in _SAFE_NAMES:
            return False
        # _translate writes numbers as floats: an int literal (a `9**9**9**9` bomb) is not ours
        if isinstance(node, ast.Constant) and not isinstance(node.value, (str, float, bool, type(None))):
            return False
        if isinstance(node, ast.Subscript) and not (
                isinstance(node.value, ast.Name) and node.value.id == "v"
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            return False
        if isinstance(node, ast.Call) and (node.keywords or not isinstance(node.func, ast.Name)):
            return False
    return True


def _float_literal(value: float) -> str:
    """Python source for a float: repr() writes `inf` / `nan`, names that do not exist in a translation
    (a rule's `1e400` overflows to inf; found by the fuzz suite)."""
    if math.isinf(value):
        return "1e999" if value > 0 else "(-1e999)"
    if math.isnan(value):
        return "(1e999 - 1e999)"
    return repr(value)


_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _comparison(node) -> Comparison | None:
    """`name OP literal` / `literal OP name` / `name OP name`, normalised with a name on the left."""
    kind = type(node).__name__
    if kind not in ("ComparisonExpression", "ArithmeticComparisonExpression"):
        return None
    op = _COMPARE.get(node.type)
    if op is None:
        return None
    left, right = _operand(node.left), _operand(node.right)
    if left is None or right is None:
        return None
    if left[0] == "name" and right[0] == "literal":
        return Comparison(left[1], op, literal=right[1])
    if left[0] == "literal" and right[0] == "name":
        return Comparison(right[1], _FLIP[op], literal=left[1])
    if left[0] == "name" and right[0] == "name":
        return Comparison(left[1], op, other=right[1])
    return None


def _operand(node):
    kind = type(node).__name__
    if kind == "SymbolExpression" and node.scope is None:
        return ("name", node.name)
    if kind == "FloatExpression":
        return ("literal", float(node.value))
    if kind == "StringExpression":
        return ("literal", str(node.value))
    if kind == "BooleanExpression":
        return ("literal", bool(node.value))
    if kind == "UnaryExpression" and node.type == "uminus" and type(node.right).__name__ == "FloatExpression":
        return ("literal", -float(node.right.value))
    return None
