"""How an index expression varies across a warp's lanes, for classifying global accesses.

`IndexInfo` says whether an integer expression is the same for every lane (`none`), consecutive
across lanes with coefficient 1 (`unit`: coalesced), a stride apart (`strided`) or unknown, and
whether it depends on a thread index at all. `Scope` holds one function's facts (variables' index
info, types, constants, pointer aliases, shared arrays) and evaluates expressions to IndexInfo.
The helpers below reach through the syntax that wraps an address (parentheses, casts, subscripts).
"""

from __future__ import annotations

from typing import Any

from skillbase.cuda import syntax
from skillbase.evidence.static.constants import Constants
from skillbase.evidence.static.cuda_names import TYPE_BYTES, vector_type_in

NONE, UNIT, STRIDED, UNKNOWN = "none", "unit", "strided", "unknown"


class IndexInfo:
    """How an integer expression varies across the lanes of a warp (threadIdx.x consecutive).

    `tx`: none (same for every lane), unit (lane-consecutive, coefficient 1), strided (lanes a
    constant or run-time stride apart), unknown. `thread`: depends on any thread index at all.
    """

    __slots__ = ("tx", "thread")

    def __init__(self, tx: str = NONE, thread: bool = False):
        self.tx, self.thread = tx, thread

    def __repr__(self) -> str:
        return f"IndexInfo({self.tx}, thread={self.thread})"


def index_either(a: IndexInfo, b: IndexInfo) -> IndexInfo:
    """Both values possible (reassignment, conditional): agree or become unknown."""
    if a.tx == b.tx:
        tx = a.tx
    elif NONE in (a.tx, b.tx) and UNKNOWN not in (a.tx, b.tx):
        tx = b.tx if a.tx == NONE else a.tx
    else:
        tx = UNKNOWN
    return IndexInfo(tx, a.thread or b.thread)


def index_sum(a: IndexInfo, b: IndexInfo) -> IndexInfo:
    """The IndexInfo of `a + b`."""
    thread = a.thread or b.thread
    if a.tx == NONE:
        return IndexInfo(b.tx, thread)
    if b.tx == NONE:
        return IndexInfo(a.tx, thread)
    if UNKNOWN in (a.tx, b.tx):
        return IndexInfo(UNKNOWN, thread)
    return IndexInfo(STRIDED, thread)  # tx + tx = 2*tx, tx*s + tx, …


class Scope:
    """Per-function facts: variables' index info and types, constants, pointer aliases, shared arrays."""

    def __init__(self, constants: Constants, pointer_params: set[str], shared: dict[str, dict]):
        self.constants = constants
        self.vars: dict[str, IndexInfo] = {}
        self.types: dict[str, str] = {}
        self.aliases: dict[str, tuple[str, IndexInfo]] = {}   # local pointer -> (param, offset info)
        self.pointer_params = pointer_params
        self.shared = shared
        self.loop_vars_constant: set[str] = set()

    def info(self, node) -> IndexInfo:
        """IndexInfo of an expression node."""
        if node is None:
            return IndexInfo()
        kind = node.type
        if kind == "field_expression":
            base = syntax.text(node.child_by_field_name("argument"))
            field = syntax.text(node.child_by_field_name("field"))
            if base == "threadIdx":
                return IndexInfo(UNIT if field == "x" else NONE, True)
            return IndexInfo()
        if kind == "identifier":
            name = syntax.text(node)
            if name in ("laneId", "lane_id"):
                return IndexInfo(UNIT, True)
            return self.vars.get(name, IndexInfo())
        if kind in ("number_literal", "char_literal", "true", "false", "sizeof_expression", "string_literal"):
            return IndexInfo()
        if kind in ("parenthesized_expression", "condition_clause"):
            inner = node.named_children
            return self.info(inner[-1]) if inner else IndexInfo()
        if kind == "cast_expression":
            return self.info(node.child_by_field_name("value"))
        if kind == "unary_expression":
            inner = self.info(node.child_by_field_name("argument"))
            op = syntax.text(node.child_by_field_name("operator"))
            if op == "+":
                return inner
            # -tx walks the lanes backwards (a stride of -1); ~, ! scramble them
            return IndexInfo(inner.tx if inner.tx == NONE else (STRIDED if op == "-" else UNKNOWN), inner.thread)
        if kind == "conditional_expression":
            return index_either(self.info(node.child_by_field_name("consequence")),
                         self.info(node.child_by_field_name("alternative")))
        if kind == "binary_expression":
            left_node, right_node = node.child_by_field_name("left"), node.child_by_field_name("right")
            left, right = self.info(left_node), self.info(right_node)
            op = syntax.text(node.child_by_field_name("operator"))
            thread = left.thread or right.thread
            if op in ("+", "-"):
                return index_sum(left, right)
            if op == "*":
                if left.tx == NONE and right.tx == NONE:
                    return IndexInfo(NONE, thread)
                varying, factor_node = (left, right_node) if left.tx != NONE else (right, left_node)
                if (left.tx != NONE and right.tx != NONE) or varying.tx == UNKNOWN:
                    return IndexInfo(UNKNOWN, thread)
                factor = self.constants.eval(factor_node)
                if factor == 1 and varying.tx == UNIT:
                    return IndexInfo(UNIT, thread)
                if factor == 0:
                    return IndexInfo(NONE, thread)
                return IndexInfo(STRIDED, thread)
            if op in ("/", ">>"):
                if left.tx == NONE and right.tx == NONE:
                    return IndexInfo(NONE, thread)
                divisor = self.constants.eval(right_node)
                if divisor is not None and op == ">>":
                    divisor = 1 << divisor
                if right.tx == NONE and divisor is not None and divisor >= 32 and left.tx == UNIT:
                    return IndexInfo(NONE, thread)  # warp-uniform: tx / 32
                return IndexInfo(UNKNOWN, thread)
            if op in ("%", "&"):
                if right.tx == NONE:
                    return IndexInfo(left.tx, thread)  # lane % 32, i & mask keep consecutive lanes
                return IndexInfo(UNKNOWN, thread)
            if op in ("<<",):
                if left.tx == NONE and right.tx == NONE:
                    return IndexInfo(NONE, thread)
                shift = self.constants.eval(right_node)
                if left.tx == UNIT and shift == 0:
                    return IndexInfo(UNIT, thread)
                return IndexInfo(STRIDED if left.tx in (UNIT, STRIDED) and right.tx == NONE else UNKNOWN, thread)
            if left.tx == NONE and right.tx == NONE:
                return IndexInfo(NONE, thread)
            return IndexInfo(UNKNOWN, thread)
        if kind == "call_expression":
            args = node.child_by_field_name("arguments")
            infos = [self.info(a) for a in (args.named_children if args else [])]
            name = syntax.text(node.child_by_field_name("function"))
            if name in ("__laneid", "laneid"):
                return IndexInfo(UNIT, True)
            method = name.rsplit(".", 1)[-1].rsplit("->", 1)[-1]
            if method == "thread_rank" and not infos:   # cooperative groups: warp.thread_rank() is the lane
                return IndexInfo(UNIT, True)
            if method in ("meta_group_rank", "group_index") and not infos:   # the warp (group) index: lane-uniform
                return IndexInfo(NONE, True)
            if any(i.tx != NONE or i.thread for i in infos):
                return IndexInfo(UNKNOWN if any(i.tx != NONE for i in infos) else NONE, True)
            return IndexInfo()
        if kind == "subscript_expression":
            # a value loaded from memory: lane-varying when its index is, never lane-consecutive
            index = self.info(subscript_index(node))
            return IndexInfo(NONE if index.tx == NONE else UNKNOWN, index.thread)
        if kind == "assignment_expression":
            return self.info(node.child_by_field_name("right"))
        return IndexInfo()

    def assign(self, name: str, info: IndexInfo, first: bool) -> None:
        self.vars[name] = info if first or name not in self.vars else index_either(self.vars[name], info)


RUNTIME_STRIDE = -1   # constant_stride: the lane index is scaled by a run-time value


def constant_stride(scope: Scope, node, defs: dict | None = None, depth: int = 0,
                    fixed: set[str] | frozenset[str] = frozenset()) -> int | None:
    """The factor that multiplies the lane index in `node` (`tid * 33` -> 33; `2 * s * tid` with a
    run-time `s` -> RUNTIME_STRIDE), following up to two levels of local definitions (`index = 2 * s *
    tid; sdata[index]`); None when the index is not a product with a lane-varying operand, or when
    the factor is a compile-time name of unknown value (`fixed`: template parameters)."""
    node = unwrap(node)
    if node is None:
        return None
    if node.type == "identifier":
        name = syntax.text(node)
        if defs and depth < 2 and name in defs:
            return constant_stride(scope, defs[name], defs, depth + 1, fixed)
        return None
    if node.type != "binary_expression":
        return None
    op = syntax.text(node.child_by_field_name("operator"))
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if op == "*":
        for varying, factor in ((left, right), (right, left)):
            if scope.info(varying).tx in (UNIT, STRIDED) and scope.info(factor).tx == NONE:
                value = scope.constants.eval(factor)
                if value is None and _names_in(factor) and _names_in(factor) <= (set(scope.constants.values) | fixed):
                    return None   # a compile-time factor of unknown value
                return RUNTIME_STRIDE if value is None else value
        return None
    if op == "<<" and scope.info(left).tx in (UNIT, STRIDED):
        shift = scope.constants.eval(right)
        return RUNTIME_STRIDE if shift is None else 1 << shift
    if op in ("+", "-"):
        for child in (left, right):
            if scope.info(child).tx in (UNIT, STRIDED) or (
                    child is not None and unwrap(child) is not None and unwrap(child).type == "identifier"
                    and defs and syntax.text(unwrap(child)) in defs):
                found = constant_stride(scope, child, defs, depth, fixed)
                if found is not None:
                    return found
    return None


def _names_in(node) -> set[str]:
    return {syntax.text(c) for c in syntax.walk(node) if c.type == "identifier"}


def subscript_index(node):
    """The (first) index expression of a subscript `a[i]`, or None."""
    args = node.child_by_field_name("indices") or next(
        (c for c in node.children if c.type == "subscript_argument_list"), None)
    if args is None:
        return None
    named = args.named_children
    return named[0] if named else None


def subscript_chain(node) -> tuple[list, Any, str | None]:
    """For a subscript `a[i][j]`: its index expressions, outermost array's first ([i, j]), the innermost argument
    with parentheses and casts removed (a), and that argument's name when it is a plain identifier."""
    chain = [subscript_index(node)]
    base = unwrap(node.child_by_field_name("argument"))
    while base is not None and base.type == "subscript_expression":
        chain.insert(0, subscript_index(base))
        base = unwrap(base.child_by_field_name("argument"))
    return chain, base, syntax.text(base) if base is not None and base.type == "identifier" else None


def unwrap(node):
    """Remove parentheses and casts around an expression."""
    while node is not None and node.type in ("parenthesized_expression", "cast_expression"):
        node = node.child_by_field_name("value") if node.type == "cast_expression" else (
            node.named_children[-1] if node.named_children else None)
    return node


def vector_cast(node) -> tuple[Any, int] | None:
    """`reinterpret_cast<const float4*>(p)` -> (p node, 16); `(float4*)p` -> (p, 16); else None."""
    if node is None:
        return None
    if node.type == "parenthesized_expression" and node.named_children:
        return vector_cast(node.named_children[-1])
    if node.type == "call_expression":
        function = node.child_by_field_name("function")
        if function is not None and function.type == "template_function" and syntax.text(
                function.child_by_field_name("name")) in ("reinterpret_cast", "static_cast"):
            type_text = syntax.text(function.child_by_field_name("arguments"))
            vec = vector_type_in(type_text)
            args = node.child_by_field_name("arguments").named_children
            if vec and args:
                return args[0], TYPE_BYTES[vec]
    if node.type == "cast_expression":
        vec = vector_type_in(syntax.text(node.child_by_field_name("type")))
        if vec and "*" in syntax.text(node.child_by_field_name("type")):
            return node.child_by_field_name("value"), TYPE_BYTES[vec]
    return None

