"""Safe arithmetic over size symbols, for shapes, scalar values and the work model.

Task specs are data, so their expressions must never run code: we parse with `ast` and accept
only a whitelist of nodes (numbers, size symbols, + - * / // % **, unary minus, and the calls
min, max, ceil_div, log2). Everything else (attribute access, subscripts, lambdas, other calls,
names that are not size symbols) is rejected when the spec loads, not when it is evaluated.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field

__all__ = ["ExprError", "Expr", "parse_expr", "FUNCTIONS"]


class ExprError(ValueError):
    """An expression that is not allowed or cannot be evaluated; the spec loader adds file and field."""


def _ceil_div(a, b):
    if b == 0:
        raise ExprError("ceil_div by zero")
    return -(-a // b)


def _log2(x):
    if x <= 0:
        raise ExprError(f"log2 of {x}")
    return math.log2(x)


FUNCTIONS = {"min": min, "max": max, "ceil_div": _ceil_div, "log2": _log2}
_ARITY = {"min": (1, None), "max": (1, None), "ceil_div": (2, 2), "log2": (1, 1)}

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}

# Sizes are at most a few billion; a bound on powers keeps `2**2**2**40` from eating the machine.
_MAX_EXPONENT = 128
_MAX_MAGNITUDE = 2 ** 200


@dataclass(frozen=True)
class Expr:
    """A parsed, validated expression; `evaluate(sizes)` computes it for one set of sizes."""

    text: str
    tree: ast.Expression = field(repr=False, compare=False)
    symbols: frozenset[str] = frozenset()

    def evaluate(self, sizes: dict[str, int | float]) -> int | float:
        missing = sorted(self.symbols - set(sizes))
        if missing:
            raise ExprError(f"'{self.text}' needs size {', '.join(missing)}")
        return _eval(self.tree.body, sizes)

    def evaluate_int(self, sizes: dict[str, int | float]) -> int:
        """The value as an int; a non-integral result (e.g. `N/3` for N=10) is an error, not a floor."""
        value = self.evaluate(sizes)
        if isinstance(value, float):
            if not math.isfinite(value) or value != int(value):
                raise ExprError(f"'{self.text}' = {value} is not a whole number")
            value = int(value)
        return value


def parse_expr(source: str | int | float, known: set[str] | frozenset[str] | None = None) -> Expr:
    """Parse and check `source`; names must be in `known` (when given). Raises ExprError."""
    if isinstance(source, bool):
        raise ExprError(f"{source!r} is not a number or expression")
    if isinstance(source, (int, float)):
        source = repr(source)
    if not isinstance(source, str) or not source.strip():
        raise ExprError(f"{source!r} is not an expression")
    text = source.strip()
    if len(text) > 500:
        raise ExprError("expression longer than 500 characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as error:
        raise ExprError(f"'{text}' is not valid arithmetic ({error.msg})") from None
    symbols: set[str] = set()
    _check(tree.body, text, symbols)
    if known is not None:
        unknown = sorted(symbols - set(known))
        if unknown:
            raise ExprError(f"unknown size symbol '{unknown[0]}' in '{text}'")
    return Expr(text, tree, frozenset(symbols))


def _check(node: ast.AST, text: str, symbols: set[str]) -> None:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExprError(f"'{text}': only numbers are allowed as constants, not {node.value!r}")
        return
    if isinstance(node, ast.Name):
        if node.id in FUNCTIONS:
            raise ExprError(f"'{text}': {node.id} must be called")
        symbols.add(node.id)
        return
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            raise ExprError(f"'{text}': operator {type(node.op).__name__} is not allowed (use + - * / // % **)")
        _check(node.left, text, symbols)
        _check(node.right, text, symbols)
        return
    if isinstance(node, ast.UnaryOp):
        if type(node.op) not in _UNARY:
            raise ExprError(f"'{text}': operator {type(node.op).__name__} is not allowed")
        _check(node.operand, text, symbols)
        return
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            name = ast.unparse(node.func)
            raise ExprError(f"'{text}': call to {name} is not allowed (only {', '.join(sorted(FUNCTIONS))})")
        if node.keywords:
            raise ExprError(f"'{text}': keyword arguments are not allowed")
        low, high = _ARITY[node.func.id]
        if len(node.args) < low or (high is not None and len(node.args) > high):
            raise ExprError(f"'{text}': {node.func.id} takes {low if low == high else f'{low} or more'} arguments")
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise ExprError(f"'{text}': *args is not allowed")
            _check(arg, text, symbols)
        return
    raise ExprError(f"'{text}': {type(node).__name__} is not allowed in a size expression")


def _eval(node: ast.AST, sizes: dict[str, int | float]):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return sizes[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, sizes), _eval(node.right, sizes)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ExprError(f"exponent {right} is too large")
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and right == 0:
            raise ExprError("division by zero")
        value = _BINOPS[type(node.op)](left, right)
        if isinstance(value, complex) or (isinstance(value, (int, float)) and abs(value) > _MAX_MAGNITUDE):
            raise ExprError("value out of range")
        return value
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, sizes))
    if isinstance(node, ast.Call):
        return FUNCTIONS[node.func.id](*[_eval(a, sizes) for a in node.args])
    raise ExprError(f"{type(node).__name__} is not allowed")  # unreachable after _check
