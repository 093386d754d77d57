"""Constant folding for static analysis: the integer value of an expression over literals, `#define`
object macros, `const`/`constexpr` integers and `sizeof`, or None when it is not a constant.

Tile sizes, shared-array dimensions, launch configurations and loop trip counts are folded with
it, so `__shared__ float s[TILE][TILE + 1]` is known to be 32 x 33 floats.
"""

from __future__ import annotations

from skillbase.cuda import syntax
from skillbase.evidence.static.cuda_names import INT_TYPES, TYPE_BYTES


class Constants:
    """Integer constants from `#define`, `constexpr`, `const int` (file scope and function scope)."""

    def __init__(self, values: dict[str, int] | None = None):
        self.values = dict(values or {})

    def child(self) -> Constants:
        """A copy for a function's scope: its own constants do not leak into the file's."""
        return Constants(self.values)

    def eval(self, node) -> int | None:
        """The folded value of expression `node`, or None."""
        if node is None:
            return None
        kind = node.type
        if kind == "number_literal":
            return int_literal(syntax.text(node))
        if kind == "identifier":
            return self.values.get(syntax.text(node))
        if kind in ("parenthesized_expression", "condition_clause"):
            inner = node.named_children
            return self.eval(inner[0]) if len(inner) == 1 else None
        if kind == "cast_expression":
            return self.eval(node.child_by_field_name("value"))
        if kind == "unary_expression":
            value = self.eval(node.child_by_field_name("argument"))
            op = syntax.text(node.child_by_field_name("operator"))
            if value is None:
                return None
            return {"-": -value, "+": value, "~": ~value, "!": int(not value)}.get(op)
        if kind == "sizeof_expression":
            return TYPE_BYTES.get(" ".join(syntax.text(node).replace("sizeof", "", 1).strip(" ()").split()))
        if kind == "binary_expression":
            left = self.eval(node.child_by_field_name("left"))
            right = self.eval(node.child_by_field_name("right"))
            if left is None or right is None:
                return None
            op = syntax.text(node.child_by_field_name("operator"))
            try:
                return {"+": lambda: left + right, "-": lambda: left - right, "*": lambda: left * right,
                        "/": lambda: int(left / right), "%": lambda: left % right, "<<": lambda: left << right,
                        ">>": lambda: left >> right, "&": lambda: left & right, "|": lambda: left | right,
                        "^": lambda: left ^ right}[op]()
            except (KeyError, ZeroDivisionError, ValueError):
                return None
        if kind == "call_expression":  # min/max of constants (common in tile sizes)
            name = syntax.text(node.child_by_field_name("function"))
            args = [self.eval(a) for a in node.child_by_field_name("arguments").named_children]
            if name in ("min", "max", "std::min", "std::max") and args and None not in args:
                return (min if name.endswith("min") else max)(args)
        return None

    def eval_text(self, text: str) -> int | None:
        """The folded value of an expression written as text (a `#define` body)."""
        tree = syntax.parse(f"int __skillbase_value = {text};".encode())
        for node in syntax.walk(tree.root_node):
            if node.type == "init_declarator":
                return self.eval(node.child_by_field_name("value"))
        return None

    def add_declaration(self, node) -> None:
        """Record `const int X = expr;` / `constexpr int X = expr;` / `static const …` declarations."""
        specifiers = " ".join(syntax.text(c) for c in node.children
                              if c.type in ("type_qualifier", "storage_class_specifier"))
        type_node = node.child_by_field_name("type")
        if type_node is None or ("const" not in specifiers and "constexpr" not in specifiers):
            return
        if syntax.text(type_node) not in INT_TYPES | {"auto", "int"}:
            return
        for declarator in node.children_by_field_name("declarator"):
            if declarator.type == "init_declarator":
                name = declarator.child_by_field_name("declarator")
                value = self.eval(declarator.child_by_field_name("value"))
                if name is not None and name.type == "identifier" and value is not None:
                    self.values[syntax.text(name)] = value


def int_literal(text: str) -> int | None:
    """`0x10u` -> 16, `1'000` -> 1000; None for a float literal."""
    cleaned = text.lower().rstrip("ul").replace("'", "")
    try:
        return int(cleaned, 0)
    except ValueError:
        return None


def is_double_literal(text: str) -> bool:
    """`1.0`, `2e3` (double precision); not `1.0f` or hex."""
    t = text.lower()
    if t.startswith("0x"):
        return False
    return ("." in t or "e" in t) and not t.endswith("f")

