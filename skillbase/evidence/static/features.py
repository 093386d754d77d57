"""Static source features of a `.cu` file, read with tree-sitter-cuda (docs/architecture.md §1b).

What an expert looks for before profiling: shared-memory tiles and their padding, vector widths,
`__ldg` / cache hints, `const __restrict__`, atomics (shared vs global), barriers in loops, warp
intrinsics, loop nests and unrolling, launch bounds, tensor-core and async-copy use, local arrays
indexed at run time, double precision, precise vs fast math, and how global accesses are indexed
by `threadIdx.x` (coalesced / strided / broadcast). Host launchers (`extern "C"`) with their
`<<<grid, block, smem, stream>>>` are listed with constant-folded sizes.

The analysis is syntactic: no macro expansion (object-like `#define` constants are folded), no
types beyond declarations in the file. `__device__` functions a kernel calls are analysed as part
of the kernel (with loop context), except for global-index classification, which needs the
kernel's own pointer parameters.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from typing import Any, Iterator

from skillbase.errors import InputError

# -- vocabulary of CUDA names -------------------------------------------------------------------

TYPE_BYTES = {
    "char": 1, "signed char": 1, "unsigned char": 1, "int8_t": 1, "uint8_t": 1, "bool": 1,
    "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "half": 2, "__half": 2,
    "__nv_bfloat16": 2, "nv_bfloat16": 2,
    "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4, "float": 4,
    "half2": 4, "__half2": 4, "__nv_bfloat162": 4, "nv_bfloat162": 4, "char4": 4, "uchar4": 4,
    "long": 8, "unsigned long": 8, "long long": 8, "unsigned long long": 8, "int64_t": 8, "uint64_t": 8,
    "size_t": 8, "double": 8, "float2": 8, "int2": 8, "uint2": 8, "short4": 8,
    "float3": 12, "int3": 12, "float4": 16, "int4": 16, "uint4": 16, "double2": 16, "longlong2": 16,
    "double4": 32,
}
VECTOR_TYPES = {"float2", "float3", "float4", "int2", "int3", "int4", "uint2", "uint4", "double2", "double4",
                "half2", "__half2", "__nv_bfloat162", "nv_bfloat162", "char4", "uchar4", "short4", "longlong2"}
DOUBLE_TYPES = {"double", "double2", "double3", "double4"}
FLOAT_TYPES = {"float", "double", "half", "__half", "__nv_bfloat16", "float2", "float4", "double2"}
INT_TYPES = {"int", "unsigned", "unsigned int", "long", "long long", "unsigned long", "unsigned long long",
             "size_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "short", "char", "unsigned char"}

ATOMICS = re.compile(r"^atomic(Add|Sub|Exch|Min|Max|Inc|Dec|CAS|And|Or|Xor)(_block|_system)?$")
LDG_CALLS = {"__ldg"}
CACHE_HINTS = {"__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv", "__stwb", "__stcg", "__stcs", "__stwt"}
HINT_STORES = {"__stwb", "__stcg", "__stcs", "__stwt"}
SHUFFLES = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
            "__shfl", "__shfl_up", "__shfl_down", "__shfl_xor"}
VOTES = {"__all_sync", "__any_sync", "__ballot_sync", "__uni_sync", "__activemask", "__match_any_sync",
         "__match_all_sync", "__all", "__any", "__ballot"}
WARP_REDUCES = {"__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync",
                "__reduce_or_sync", "__reduce_xor_sync"}
SYNCTHREADS = {"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"}
FENCES = {"__threadfence", "__threadfence_block", "__threadfence_system"}
PRECISE_FLOAT_MATH = {"expf", "exp2f", "exp10f", "expm1f", "logf", "log2f", "log10f", "log1pf", "sinf", "cosf",
                      "tanf", "sincosf", "powf", "sinhf", "coshf", "tanhf", "asinf", "acosf", "atanf", "atan2f",
                      "erff", "erfcf", "cbrtf", "hypotf", "sinpif", "cospif"}
DOUBLE_MATH = {"sqrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
               "sincos", "pow", "sinh", "cosh", "tanh", "asin", "acos", "atan", "atan2", "cbrt", "rsqrt", "erf",
               "erfc", "hypot", "fma", "fmod", "sinpi", "cospi"}
FAST_INTRINSICS = {"__expf", "__exp10f", "__logf", "__log2f", "__log10f", "__sinf", "__cosf", "__tanf", "__powf",
                   "__sincosf", "__fdividef", "__frcp_rn", "__fsqrt_rn", "__frsqrt_rn", "__fdiv_rn", "hexp", "h2exp",
                   "hsin", "h2sin", "hcos", "h2cos", "hlog", "h2log", "hrsqrt", "h2rsqrt", "rsqrtf", "__saturatef"}
LIBRARY_CALL = re.compile(r"^(cublas|cudnn|cufft|curand|cusparse|cusolver|nccl)[A-Z_]|^cuTensorMapEncode")
LIBRARY_NAMESPACES = {"cub", "thrust", "cutlass", "cute", "cublasLt"}
LOOPS = {"for_statement", "while_statement", "do_statement", "for_range_loop"}


@functools.cache
def _parser():
    import tree_sitter
    import tree_sitter_cuda

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


def _text(node) -> str:
    return node.text.decode("utf-8", errors="replace")


def _walk(node) -> Iterator:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _line(node) -> int:
    return node.start_point[0] + 1


# -- constant folding ---------------------------------------------------------------------------

class Constants:
    """Integer constants from `#define`, `constexpr`, `const int` (file scope and function scope)."""

    def __init__(self, values: dict[str, int] | None = None):
        self.values = dict(values or {})

    def child(self) -> Constants:
        return Constants(self.values)

    def eval(self, node) -> int | None:
        if node is None:
            return None
        kind = node.type
        if kind == "number_literal":
            return _int_literal(_text(node))
        if kind == "identifier":
            return self.values.get(_text(node))
        if kind in ("parenthesized_expression", "condition_clause"):
            inner = node.named_children
            return self.eval(inner[0]) if len(inner) == 1 else None
        if kind == "cast_expression":
            return self.eval(node.child_by_field_name("value"))
        if kind == "unary_expression":
            value = self.eval(node.child_by_field_name("argument"))
            op = _text(node.child_by_field_name("operator"))
            if value is None:
                return None
            return {"-": -value, "+": value, "~": ~value, "!": int(not value)}.get(op)
        if kind == "sizeof_expression":
            return TYPE_BYTES.get(" ".join(_text(node).replace("sizeof", "", 1).strip(" ()").split()))
        if kind == "binary_expression":
            left = self.eval(node.child_by_field_name("left"))
            right = self.eval(node.child_by_field_name("right"))
            if left is None or right is None:
                return None
            op = _text(node.child_by_field_name("operator"))
            try:
                return {"+": lambda: left + right, "-": lambda: left - right, "*": lambda: left * right,
                        "/": lambda: int(left / right), "%": lambda: left % right, "<<": lambda: left << right,
                        ">>": lambda: left >> right, "&": lambda: left & right, "|": lambda: left | right,
                        "^": lambda: left ^ right}[op]()
            except (KeyError, ZeroDivisionError, ValueError):
                return None
        if kind == "call_expression":  # min/max of constants (common in tile sizes)
            name = _text(node.child_by_field_name("function"))
            args = [self.eval(a) for a in node.child_by_field_name("arguments").named_children]
            if name in ("min", "max", "std::min", "std::max") and args and None not in args:
                return (min if name.endswith("min") else max)(args)
        return None

    def eval_text(self, text: str) -> int | None:
        tree = _parser().parse(f"int __skillbase_value = {text};".encode())
        for node in _walk(tree.root_node):
            if node.type == "init_declarator":
                return self.eval(node.child_by_field_name("value"))
        return None

    def add_declaration(self, node) -> None:
        """Record `const int X = expr;` / `constexpr int X = expr;` / `static const …` declarations."""
        specifiers = " ".join(_text(c) for c in node.children if c.type in ("type_qualifier", "storage_class_specifier"))
        type_node = node.child_by_field_name("type")
        if type_node is None or ("const" not in specifiers and "constexpr" not in specifiers):
            return
        if _text(type_node) not in INT_TYPES | {"auto", "int"}:
            return
        for declarator in node.children_by_field_name("declarator"):
            if declarator.type == "init_declarator":
                name = declarator.child_by_field_name("declarator")
                value = self.eval(declarator.child_by_field_name("value"))
                if name is not None and name.type == "identifier" and value is not None:
                    self.values[_text(name)] = value


def _int_literal(text: str) -> int | None:
    cleaned = text.lower().rstrip("ul").replace("'", "")
    try:
        return int(cleaned, 0)
    except ValueError:
        return None


def _is_double_literal(text: str) -> bool:
    t = text.lower()
    if t.startswith("0x"):
        return False
    return ("." in t or "e" in t) and not t.endswith("f")


# -- thread-index classification ----------------------------------------------------------------

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


def _join(a: IndexInfo, b: IndexInfo) -> IndexInfo:
    """Both values possible (reassignment, conditional): agree or become unknown."""
    if a.tx == b.tx:
        tx = a.tx
    elif NONE in (a.tx, b.tx) and UNKNOWN not in (a.tx, b.tx):
        tx = b.tx if a.tx == NONE else a.tx
    else:
        tx = UNKNOWN
    return IndexInfo(tx, a.thread or b.thread)


def _add(a: IndexInfo, b: IndexInfo) -> IndexInfo:
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
            base = _text(node.child_by_field_name("argument"))
            field = _text(node.child_by_field_name("field"))
            if base == "threadIdx":
                return IndexInfo(UNIT if field == "x" else NONE, True)
            return IndexInfo()
        if kind == "identifier":
            name = _text(node)
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
            op = _text(node.child_by_field_name("operator"))
            return inner if op in ("+",) else IndexInfo(inner.tx if inner.tx == NONE else (STRIDED if op == "-" else UNKNOWN), inner.thread)
        if kind == "conditional_expression":
            return _join(self.info(node.child_by_field_name("consequence")),
                         self.info(node.child_by_field_name("alternative")))
        if kind == "binary_expression":
            left_node, right_node = node.child_by_field_name("left"), node.child_by_field_name("right")
            left, right = self.info(left_node), self.info(right_node)
            op = _text(node.child_by_field_name("operator"))
            thread = left.thread or right.thread
            if op in ("+", "-"):
                return _add(left, right)
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
            name = _text(node.child_by_field_name("function"))
            if name in ("__laneid", "laneid"):
                return IndexInfo(UNIT, True)
            if any(i.tx != NONE or i.thread for i in infos):
                return IndexInfo(UNKNOWN if any(i.tx != NONE for i in infos) else NONE, True)
            return IndexInfo()
        if kind == "subscript_expression":
            # a value loaded from memory: lane-varying when its index is, never lane-consecutive
            index = self.info(_subscript_index(node))
            return IndexInfo(NONE if index.tx == NONE else UNKNOWN, index.thread)
        if kind == "assignment_expression":
            return self.info(node.child_by_field_name("right"))
        return IndexInfo()

    def assign(self, name: str, info: IndexInfo, first: bool) -> None:
        self.vars[name] = info if first or name not in self.vars else _join(self.vars[name], info)


def _subscript_index(node):
    args = node.child_by_field_name("indices") or next(
        (c for c in node.children if c.type == "subscript_argument_list"), None)
    if args is None:
        return None
    named = args.named_children
    return named[0] if named else None


def _strip(node):
    """Remove parentheses and casts around an expression."""
    while node is not None and node.type in ("parenthesized_expression", "cast_expression"):
        node = node.child_by_field_name("value") if node.type == "cast_expression" else (
            node.named_children[-1] if node.named_children else None)
    return node


def _vector_cast(node) -> tuple[Any, int] | None:
    """`reinterpret_cast<const float4*>(p)` -> (p node, 16); `(float4*)p` -> (p, 16); else None."""
    node = node
    if node is None:
        return None
    if node.type == "parenthesized_expression" and node.named_children:
        return _vector_cast(node.named_children[-1])
    if node.type == "call_expression":
        function = node.child_by_field_name("function")
        if function is not None and function.type == "template_function" and _text(
                function.child_by_field_name("name")) in ("reinterpret_cast", "static_cast"):
            type_text = _text(function.child_by_field_name("arguments"))
            vec = _vector_type_in(type_text)
            args = node.child_by_field_name("arguments").named_children
            if vec and args:
                return args[0], TYPE_BYTES[vec]
    if node.type == "cast_expression":
        vec = _vector_type_in(_text(node.child_by_field_name("type")))
        if vec and "*" in _text(node.child_by_field_name("type")):
            return node.child_by_field_name("value"), TYPE_BYTES[vec]
    return None


def _vector_type_in(text: str) -> str | None:
    for word in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text):
        if word in VECTOR_TYPES:
            return word
    return None


def _declarator_name(node) -> str | None:
    """The identifier a declarator declares (through pointers, arrays, references, init)."""
    while node is not None:
        if node.type in ("identifier", "field_identifier"):
            return _text(node)
        if node.type in ("qualified_identifier", "template_function"):
            return _text(node.child_by_field_name("name"))
        inner = node.child_by_field_name("declarator")
        if inner is None:
            named = [c for c in node.named_children if c.type not in ("type_qualifier", "ms_pointer_modifier")]
            inner = named[0] if named else None
        node = inner
    return None


def _array_dims(declarator, constants: Constants) -> tuple[str | None, list[int | None]] | None:
    """`s[TILE][TILE+1]` -> ("s", [32, 33]); not an array -> None."""
    node = declarator
    if node.type == "init_declarator":
        node = node.child_by_field_name("declarator")
    dims: list[int | None] = []
    while node is not None and node.type == "array_declarator":
        size = node.child_by_field_name("size")
        dims.insert(0, constants.eval(size) if size is not None else None)
        node = node.child_by_field_name("declarator")
    if not dims or node is None:
        return None
    return _declarator_name(node), dims


# -- the analysis -------------------------------------------------------------------------------

class _Analyzer:
    def __init__(self, source: bytes, path: str):
        self.source = source
        self.path = path
        self.tree = _parser().parse(source)
        self.root = self.tree.root_node
        self.constants = Constants()
        self.functions: dict[str, Any] = {}      # __device__ / host helpers by name
        self.kernels: list[tuple[str, Any]] = []
        self.launchers: list[tuple[str, Any]] = []
        self.asm_texts: dict[int, list[str]] = {}

    def run(self) -> dict[str, Any]:
        self._collect()
        parse_errors = self._parse_errors()
        if not self.kernels:
            if parse_errors:
                raise InputError(f"{self.path}:{parse_errors[0]}: cannot parse the CUDA source near here "
                                 "(no __global__ kernel found)", hint="check that the file compiles with nvcc")
            raise InputError(f"{self.path}: no __global__ kernel found in the source",
                             hint="give the .cu file that defines the kernel")
        kernels = {}
        for name, node in self.kernels:
            key = name if name not in kernels else f"{name}@{_line(node)}"
            kernels[key] = self._kernel(node)
        launchers = {name: self._launcher(node) for name, node in self.launchers}
        launch_nodes = [n for n in _walk(self.root) if n.type == "kernel_call_syntax"]
        return {
            "file": {
                "path": self.path,
                "parse_errors": parse_errors,
                "includes": [_text(n.child_by_field_name("path")).strip('<>"')
                             for n in _walk(self.root) if n.type == "preproc_include"],
                "library_calls": sorted({_text(n) for n in _walk(self.root)
                                         if (n.type == "identifier" and LIBRARY_CALL.match(_text(n)))
                                         or (n.type == "namespace_identifier" and _text(n) in LIBRARY_NAMESPACES)}),
                "kernel_launches": len(launch_nodes),
                "launches_in_host_loops": sum(1 for n in launch_nodes if _inside(n, LOOPS)),
            },
            "kernels": kernels,
            "launchers": launchers,
        }

    # -- collection --

    def _collect(self) -> None:
        for node in _walk(self.root):
            if node.type == "preproc_def":
                name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
                if name is not None and value is not None:
                    folded = self.constants.eval_text(_text(value).strip())
                    if folded is not None:
                        self.constants.values[_text(name)] = folded
            elif node.type == "declaration" and not _inside(node, {"function_definition"}):
                self.constants.add_declaration(node)
            elif node.type == "function_definition":
                name = _declarator_name(node.child_by_field_name("declarator"))
                if not name:
                    continue
                qualifiers = {c.type for c in node.children}
                if "__global__" in qualifiers:
                    self.kernels.append((name, node))
                else:
                    self.functions.setdefault(name, node)
                    if _extern_c(node):
                        self.launchers.append((name, node))

    def _parse_errors(self) -> list[str]:
        errors = []
        for node in _walk(self.root):
            if node.type == "ERROR" or node.is_missing:
                snippet = " ".join(_text(node).split())[:60]
                what = f"missing {node.type}" if node.is_missing else f"unparsed `{snippet}`"
                errors.append(f"{_line(node)}: {what}")
        return errors[:50]

    # -- kernels --

    def _params(self, function, with_restrict: bool = True) -> list[dict[str, Any]]:
        declarator = function.child_by_field_name("declarator")
        while declarator is not None and declarator.type != "function_declarator":
            declarator = declarator.child_by_field_name("declarator")
        params = []
        if declarator is None:
            return params
        for p in declarator.child_by_field_name("parameters").named_children:
            if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
                continue
            text = " ".join(_text(p).split())
            name = _declarator_name(p.child_by_field_name("declarator")) if p.child_by_field_name("declarator") else None
            type_text = text[: text.rfind(name)].strip() if name and name in text else text
            pointer = "*" in type_text or "[" in text
            base_type = _text(p.child_by_field_name("type")) if p.child_by_field_name("type") else ""
            # const applies to the pointee when it precedes the '*' (const float* / float const*)
            pointee_const = pointer and "const" in type_text.split("*")[0]
            entry = {"name": name, "type": type_text, "pointer": pointer,
                     "const": pointee_const if pointer else "const" in type_text.split()}
            if with_restrict:
                entry["restrict"] = "__restrict__" in text or "restrict" in type_text.split()
            entry["_base"] = base_type
            params.append(entry)
        return params

    def _kernel(self, node) -> dict[str, Any]:
        params = self._params(node)
        pointer_params = {p["name"] for p in params if p["pointer"] and p["name"]}
        constants = self.constants.child()
        shared = self._shared_arrays(node, constants)
        scope = Scope(constants, pointer_params, {a["name"]: a for a in shared["arrays"]})
        for p in params:
            if p["name"]:
                scope.types[p["name"]] = p.pop("_base")
            else:
                p.pop("_base")
        features = _KernelFeatures(self, scope, params)
        features.visit(node.child_by_field_name("body"), loop_depth=0, seen={_declarator_name(node.child_by_field_name("declarator"))})
        launch_bounds = None
        for child in node.children:
            if child.type == "launch_bounds":
                values = [constants.eval(c) for c in child.named_children]
                launch_bounds = {"max_threads": values[0] if values else None,
                                 "min_blocks": values[1] if len(values) > 1 else None}
        out = {"line": _line(node), "params": params, "launch_bounds": launch_bounds}
        shared["column_access"] = features.column_access
        out["shared"] = shared
        out.update(features.result())
        return out

    def _shared_arrays(self, function, constants: Constants) -> dict[str, Any]:
        arrays, dynamic = [], False
        body = function.child_by_field_name("body")
        for node in _walk(body):
            if node.type != "declaration":
                continue
            if "__shared__" not in {_text(c) for c in node.children if c.type == "type_qualifier"}:
                if not _inside(node, LOOPS):  # function-scope `const int C = 4;` sizes later arrays
                    constants.add_declaration(node)
                continue
            extern = any(_text(c) == "extern" for c in node.children if c.type == "storage_class_specifier")
            type_text = _text(node.child_by_field_name("type"))
            for declarator in node.children_by_field_name("declarator"):
                found = _array_dims(declarator, constants)
                name, dims = found if found else (_declarator_name(declarator), [])
                element = TYPE_BYTES.get(type_text)
                if extern:
                    dynamic = True
                    arrays.append({"name": name, "type": type_text, "dims": [None], "bytes": None, "dynamic": True})
                    continue
                nbytes = None
                if element is not None and all(d is not None for d in dims):
                    nbytes = element * math.prod(dims)  # type: ignore[arg-type]
                arrays.append({"name": name, "type": type_text, "dims": dims, "bytes": nbytes})
        static = [a for a in arrays if not a.get("dynamic")]
        static_bytes = sum(a["bytes"] for a in static) if all(a["bytes"] is not None for a in static) else None
        for a in arrays:
            a.pop("dynamic", None)
        return {"static_bytes": static_bytes, "dynamic": dynamic, "arrays": arrays, "column_access": 0}

    # -- launchers --

    def _launcher(self, node) -> dict[str, Any]:
        params = self._params(node, with_restrict=False)
        for p in params:
            p.pop("_base", None)
        constants = self.constants.child()
        dims: dict[str, int | None] = {}
        body = node.child_by_field_name("body")
        launches = []
        for child in _walk(body):
            if child.type == "declaration":
                constants.add_declaration(child)
                if _text(child.child_by_field_name("type")) == "dim3":
                    for declarator in child.children_by_field_name("declarator"):
                        dims[_declarator_name(declarator) or ""] = self._dim3(declarator, constants)
            elif child.type == "call_expression" and any(c.type == "kernel_call_syntax" for c in child.children):
                config = next(c for c in child.children if c.type == "kernel_call_syntax").named_children
                function = child.child_by_field_name("function")
                kernel = _text(function.child_by_field_name("name")) if function.type == "template_function" else _text(function)
                grid, block = (config + [None, None])[:2]
                launches.append({
                    "kernel": kernel.split("::")[-1],
                    "line": _line(child),
                    "grid": _text(grid) if grid is not None else "",
                    "block": _text(block) if block is not None else "",
                    "shared": _text(config[2]) if len(config) > 2 else None,
                    "stream": _text(config[3]) if len(config) > 3 else None,
                    "block_threads": self._size(block, constants, dims),
                    "grid_blocks": self._size(grid, constants, dims),
                    "in_loop": _inside(child, LOOPS),
                })
        return {"line": _line(node), "params": params, "launches": launches}

    def _dim3(self, declarator, constants: Constants) -> int | None:
        args = None
        if declarator.type == "init_declarator":
            value = declarator.child_by_field_name("value")
            if value is not None and value.type == "argument_list":
                args = value.named_children
            elif value is not None and value.type == "initializer_list":
                args = value.named_children
            elif value is not None and value.type == "call_expression":
                args = value.child_by_field_name("arguments").named_children
        if args is None:
            return 1 if declarator.type == "identifier" else None
        values = [constants.eval(a) for a in args]
        return math.prod(values) if values and None not in values else None  # type: ignore[arg-type]

    def _size(self, node, constants: Constants, dims: dict[str, int | None]) -> int | None:
        if node is None:
            return None
        stripped = _strip(node)
        if stripped is not None and stripped.type == "identifier" and _text(stripped) in dims:
            return dims[_text(stripped)]
        if stripped is not None and stripped.type == "call_expression" and _text(stripped.child_by_field_name("function")) == "dim3":
            values = [constants.eval(a) for a in stripped.child_by_field_name("arguments").named_children]
            return math.prod(values) if values and None not in values else None  # type: ignore[arg-type]
        return constants.eval(node)


def _extern_c(node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type == "linkage_specification":
            return True
        parent = parent.parent
    return False


def _inside(node, kinds: set[str]) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type in kinds:
            return True
        if parent.type == "function_definition":
            return False
        parent = parent.parent
    return False


class _KernelFeatures:
    """One walk over a kernel body (and the device functions it calls) counting every feature."""

    def __init__(self, analyzer: _Analyzer, scope: Scope, params: list[dict[str, Any]]):
        self.a = analyzer
        self.scope = scope
        self.params = params
        self.g = {"loads": 0, "stores": 0, "vector_loads": 0, "vector_stores": 0, "max_vector_bytes": 0,
                  "ldg": 0, "cache_hint_calls": 0, "coalesced": 0, "strided": 0, "broadcast": 0, "unknown": 0}
        self.atomics = {"global": 0, "shared": 0, "total": 0, "in_loops": 0}
        self.barriers = {"syncthreads": 0, "in_loops": 0, "syncwarp": 0, "grid_sync": 0, "fences": 0}
        self.warp = {"shuffles": 0, "votes": 0, "reduces": 0}
        self.loops = {"count": 0, "max_depth": 0, "unroll_pragmas": 0, "constant_trip": 0}
        self.tensor = {"wmma": False, "mma_sync": False, "wgmma": False}
        self.async_copy = {"cp_async": False, "memcpy_async": False, "tma": False}
        self.local: dict[str, dict[str, Any]] = {}
        self.fp64 = {"double_decls": 0, "double_literals": 0, "double_math_calls": 0}
        self.math = {"transcendental_calls": 0, "fast_intrinsics": 0, "float_divisions": 0, "int_div_mod": 0}
        self.branches = {"thread_dependent": 0, "in_loops": 0}
        self.column_access = 0
        self.done: set[int] = set()   # store targets already counted, not to be counted as loads
        for p in params:
            if p["type"] and any(t in DOUBLE_TYPES for t in re.findall(r"\w+", p["type"])):
                self.fp64["double_decls"] += 1
            if "CUtensorMap" in (p["type"] or ""):
                self.async_copy["tma"] = True

    def result(self) -> dict[str, Any]:
        pointers = [p for p in self.params if p["pointer"]]
        g = dict(self.g)
        g["pointer_inputs"] = len(pointers)
        g["const_restrict_inputs"] = sum(1 for p in pointers if p["const"] and p.get("restrict"))
        dependent = g["coalesced"] + g["strided"] + g["unknown"]
        g["threadx_fastest"] = None if dependent == 0 else (g["strided"] == 0 and g["coalesced"] > 0 and
                                                            g["unknown"] <= g["coalesced"])
        return {"global_access": g, "atomics": self.atomics, "barriers": self.barriers,
                "warp_intrinsics": self.warp, "loops": self.loops, "tensor_cores": self.tensor,
                "async_copy": self.async_copy, "local_arrays": list(self.local.values()), "fp64": self.fp64,
                "math": self.math, "branches": self.branches}

    # -- traversal --

    def visit(self, node, loop_depth: int, seen: set[str], in_callee: bool = False) -> None:
        if node is None:
            return
        kind = node.type
        if kind in LOOPS:
            self._loop(node, loop_depth, seen, in_callee)
            return
        if kind == "declaration":
            self._declaration(node, in_callee)
        elif kind == "preproc_call":
            directive = _text(node.child_by_field_name("directive"))
            argument = _text(node.child_by_field_name("argument")) if node.child_by_field_name("argument") else ""
            if directive == "#pragma" and argument.strip().startswith("unroll"):
                self.loops["unroll_pragmas"] += 1
        elif kind == "assignment_expression":
            self._assignment(node, loop_depth, in_callee)
        elif kind == "update_expression":
            pass
        elif kind == "call_expression":
            self._call(node, loop_depth, seen, in_callee)
        elif kind in ("gnu_asm_expression", "asm_statement"):
            self._asm(_text(node))
        elif kind == "subscript_expression":
            self._subscript(node, is_store=False, is_load=True, in_callee=in_callee)
        elif kind == "pointer_expression":
            self._deref(node, is_store=False, in_callee=in_callee)
        elif kind == "number_literal":
            if _is_double_literal(_text(node)):
                self.fp64["double_literals"] += 1
        elif kind in ("qualified_identifier", "namespace_identifier"):
            text = _text(node)
            if "wmma" in text:
                self.tensor["wmma"] = True
            if "memcpy_async" in text:
                self.async_copy["memcpy_async"] = True
            if "cp_async_bulk" in text:
                self.async_copy["tma"] = True
            if "wgmma" in text:
                self.tensor["wgmma"] = True
        elif kind in ("if_statement", "conditional_expression", "switch_statement"):
            self._branch(node, loop_depth)
        elif kind == "binary_expression":
            self._division(node)
        if kind == "subscript_expression":
            # visit the index expressions (nested loads) of every level of s[a][b], not the array
            current = node
            while current is not None and current.type == "subscript_expression":
                for child in current.children:
                    if child.type == "subscript_argument_list":
                        self.visit(child, loop_depth, seen, in_callee)
                current = _strip(current.child_by_field_name("argument"))
                if current is not None and current.type not in ("subscript_expression", "identifier"):
                    self.visit(current, loop_depth, seen, in_callee)
            return
        for child in node.children:
            self.visit(child, loop_depth, seen, in_callee)

    def _loop(self, node, loop_depth: int, seen: set[str], in_callee: bool) -> None:
        depth = loop_depth + 1
        self.loops["count"] += 1
        self.loops["max_depth"] = max(self.loops["max_depth"], depth)
        if node.type == "for_statement":
            variable = self._for_variable(node)
            if variable and self._constant_trip(node, variable):
                self.loops["constant_trip"] += 1
                self.scope.loop_vars_constant.add(variable)
        body = node.child_by_field_name("body")
        for child in node.children:
            # header parts (initialiser, condition, update) count at the loop's own level
            self.visit(child, depth if body is not None and child.id == body.id else loop_depth, seen, in_callee)

    def _for_variable(self, node) -> str | None:
        init = node.child_by_field_name("initializer")
        if init is None:
            return None
        if init.type == "declaration":
            for declarator in init.children_by_field_name("declarator"):
                return _declarator_name(declarator)
        if init.type == "assignment_expression":
            return _text(init.child_by_field_name("left"))
        return None

    def _constant_trip(self, node, variable: str) -> bool:
        init = node.child_by_field_name("initializer")
        condition = node.child_by_field_name("condition")
        start = None
        if init is not None and init.type == "declaration":
            for declarator in init.children_by_field_name("declarator"):
                if declarator.type == "init_declarator":
                    start = self.scope.constants.eval(declarator.child_by_field_name("value"))
        elif init is not None and init.type == "assignment_expression":
            start = self.scope.constants.eval(init.child_by_field_name("right"))
        if start is None or condition is None or condition.type != "binary_expression":
            return False
        left, right = condition.child_by_field_name("left"), condition.child_by_field_name("right")
        if _text(left) == variable:
            return self.scope.constants.eval(right) is not None
        if _text(right) == variable:
            return self.scope.constants.eval(left) is not None
        return False

    def _declaration(self, node, in_callee: bool) -> None:
        type_node = node.child_by_field_name("type")
        type_text = _text(type_node) if type_node is not None else ""
        qualifiers = {_text(c) for c in node.children if c.type in ("type_qualifier", "storage_class_specifier")}
        if type_text in DOUBLE_TYPES:
            self.fp64["double_decls"] += len(node.children_by_field_name("declarator"))
        if "__shared__" in qualifiers:
            return
        if {"const", "constexpr"} & qualifiers:
            self.scope.constants.add_declaration(node)
        for declarator in node.children_by_field_name("declarator"):
            name = _declarator_name(declarator)
            if not name:
                continue
            self.scope.types[name] = type_text + ("*" if "*" in _text(declarator).split("=")[0] else "")
            dims = _array_dims(declarator, self.scope.constants)
            if dims is not None and not in_callee and "static" not in qualifiers:
                elements = math.prod(dims[1]) if all(d is not None for d in dims[1]) else None  # type: ignore[arg-type]
                element = TYPE_BYTES.get(type_text)
                self.local[name] = {"name": name, "type": type_text, "elements": elements,
                                    "bytes": elements * element if elements is not None and element else None,
                                    "dynamic_index": False}
                continue
            if declarator.type == "init_declarator":
                value = declarator.child_by_field_name("value")
                if value is None or value.type in ("argument_list", "initializer_list"):
                    continue
                stripped = _strip(value)
                # a local pointer into a kernel parameter keeps the parameter's identity
                if "*" in _text(declarator).split("=")[0] and not in_callee:
                    alias = self._pointer_alias(stripped)
                    if alias is not None:
                        self.scope.aliases[name] = alias
                        continue
                self.scope.assign(name, self.scope.info(value), first=True)
        return

    def _pointer_alias(self, node) -> tuple[str, IndexInfo] | None:
        if node is None:
            return None
        if node.type == "identifier":
            name = _text(node)
            if name in self.scope.pointer_params:
                return name, IndexInfo()
            return self.scope.aliases.get(name)
        if node.type == "binary_expression" and _text(node.child_by_field_name("operator")) in ("+", "-"):
            left, right = _strip(node.child_by_field_name("left")), node.child_by_field_name("right")
            base = self._pointer_alias(left)
            if base is not None:
                return base[0], _add(base[1], self.scope.info(right))
        if node.type == "pointer_expression" and _text(node.child_by_field_name("operator")) == "&":
            inner = _strip(node.child_by_field_name("argument"))
            if inner is not None and inner.type == "subscript_expression":
                base = self._pointer_alias(_strip(inner.child_by_field_name("argument")))
                if base is not None:
                    return base[0], _add(base[1], self.scope.info(_subscript_index(inner)))
        return None

    def _assignment(self, node, loop_depth: int, in_callee: bool) -> None:
        left = _strip(node.child_by_field_name("left"))
        op = _text(node.child_by_field_name("operator"))
        if left is not None and left.type == "identifier":
            name = _text(left)
            if op == "=":
                self.scope.assign(name, self.scope.info(node.child_by_field_name("right")), first=False)
            elif op in ("+=", "-=") and name in self.scope.vars:
                self.scope.assign(name, _add(self.scope.vars[name], self.scope.info(node.child_by_field_name("right"))), first=True)
        if left is not None and left.type == "field_expression":  # p[i].x = v stores into p[i]
            inner = _strip(left.child_by_field_name("argument"))
            left = inner if inner is not None and inner.type == "subscript_expression" else left
        if left is not None and left.type == "subscript_expression":
            self._subscript(left, is_store=True, is_load=op != "=", in_callee=in_callee)
            self.done.add(left.id)
        elif left is not None and left.type == "pointer_expression":
            self._deref(left, is_store=True, in_callee=in_callee)
            self.done.add(left.id)

    # -- memory accesses --

    def _resolve_base(self, node) -> tuple[str | None, IndexInfo, int]:
        """(kernel pointer parameter, extra offset, vector bytes) for the base of an access."""
        vector = 0
        stripped = _strip(node)
        cast = _vector_cast(stripped) if stripped is not None else None
        if cast is not None:
            stripped, vector = _strip(cast[0]), cast[1]
        if stripped is None:
            return None, IndexInfo(), vector
        alias = self._pointer_alias(stripped)
        if alias is None:
            return None, IndexInfo(), vector
        param = alias[0]
        if not vector:
            ptype = next((p["type"] for p in self.params if p["name"] == param), "")
            vec = _vector_type_in(ptype)
            vector = TYPE_BYTES[vec] if vec else 0
        return param, alias[1], vector

    def _subscript(self, node, is_store: bool, is_load: bool, in_callee: bool) -> None:
        if node.id in self.done:
            return
        base_node = node.child_by_field_name("argument")
        stripped = _strip(base_node)
        index_node = _subscript_index(node)
        # nested subscripts s[a][b]: the array is the innermost argument
        chain = [index_node]
        while stripped is not None and stripped.type == "subscript_expression":
            chain.insert(0, _subscript_index(stripped))
            stripped = _strip(stripped.child_by_field_name("argument"))
        name = _text(stripped) if stripped is not None and stripped.type == "identifier" else None
        if name in self.scope.shared:
            self._shared_access(self.scope.shared[name], chain)
            return
        if name in self.local:
            if any(not self._static_index(i) for i in chain):
                self.local[name]["dynamic_index"] = True
            return
        if in_callee:
            return
        if _parent_is_address_of(node):
            return  # &p[i]: an address; counted where it is used (__ldg, atomics, casts)
        param, offset, vector = self._resolve_base(base_node if len(chain) == 1 else stripped)
        if param is None:
            return
        info = _add(offset, self.scope.info(index_node))
        self._count_access(info, vector, is_store, is_load)

    def _count_access(self, info: IndexInfo, vector: int, is_store: bool, is_load: bool) -> None:
        if is_store:
            self.g["stores"] += 1
            if vector:
                self.g["vector_stores"] += 1
        if is_load:
            self.g["loads"] += 1
            if vector:
                self.g["vector_loads"] += 1
        self.g["max_vector_bytes"] = max(self.g["max_vector_bytes"], vector)
        self.g[{UNIT: "coalesced", STRIDED: "strided", NONE: "broadcast", UNKNOWN: "unknown"}[info.tx]] += 1

    def _deref(self, node, is_store: bool, in_callee: bool) -> None:
        """`*reinterpret_cast<float4*>(&p[i])`, `*(p + i)`: a global access through a pointer."""
        if in_callee or node.id in self.done or _text(node.child_by_field_name("operator")) != "*":
            return
        argument = _strip(node.child_by_field_name("argument"))
        vector = 0
        cast = _vector_cast(argument) if argument is not None else None
        if cast is not None:
            argument, vector = _strip(cast[0]), cast[1]
        alias = self._pointer_alias(argument)
        if alias is None:
            return
        if not vector:
            vec = _vector_type_in(next((p["type"] for p in self.params if p["name"] == alias[0]), ""))
            vector = TYPE_BYTES[vec] if vec else 0
        self._count_access(alias[1], vector, is_store, not is_store)

    def _static_index(self, node) -> bool:
        """Known at compile time after unrolling: constants and counters of constant-trip loops."""
        if node is None:
            return True
        for child in _walk(node):
            if child.type == "identifier":
                name = _text(child)
                if name not in self.scope.constants.values and name not in self.scope.loop_vars_constant:
                    return False
            elif child.type in ("field_expression", "call_expression", "subscript_expression"):
                return False
        return True

    def _shared_access(self, array: dict[str, Any], chain: list) -> None:
        """Count accesses whose lanes (threadIdx.x) walk down a column of a row of 32·k words."""
        dims = array["dims"]
        element = TYPE_BYTES.get(array["type"], 4)
        infos = [self.scope.info(i) for i in chain]
        if len(chain) >= 2 and len(dims) == len(chain):
            row = dims[-1]  # words per row: a multiple of 32 puts a column in one bank
            for info in infos[:-1]:
                if info.tx == UNIT and row is not None and (row * element // 4) % 32 == 0:
                    self.column_access += 1
                    return
        elif len(chain) == 1 and chain[0] is not None:
            index = chain[0]
            for node in _walk(index):
                if node.type == "binary_expression" and _text(node.child_by_field_name("operator")) == "*":
                    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
                    for varying, factor in ((left, right), (right, left)):
                        stride = self.scope.constants.eval(factor)
                        if self.scope.info(varying).tx == UNIT and stride and (stride * element // 4) % 32 == 0:
                            self.column_access += 1
                            return

    # -- calls --

    def _call(self, node, loop_depth: int, seen: set[str], in_callee: bool) -> None:
        function = node.child_by_field_name("function")
        full = _text(function)
        name = full.split("::")[-1].split(".")[-1].split("->")[-1]
        if function.type == "template_function":
            name = _text(function.child_by_field_name("name")).split("::")[-1]
        args = node.child_by_field_name("arguments")
        arg_nodes = args.named_children if args is not None else []
        if ATOMICS.match(name):
            self._atomic(arg_nodes[0] if arg_nodes else None, loop_depth)
        elif name in SYNCTHREADS:
            self.barriers["syncthreads"] += 1
            if loop_depth:
                self.barriers["in_loops"] += 1
        elif name == "__syncwarp":
            self.barriers["syncwarp"] += 1
        elif name in FENCES:
            self.barriers["fences"] += 1
        elif name == "sync" and ("grid" in full.lower() or (arg_nodes and "grid" in _text(arg_nodes[0]).lower())):
            self.barriers["grid_sync"] += 1
        elif name in SHUFFLES:
            self.warp["shuffles"] += 1
        elif name in VOTES:
            self.warp["votes"] += 1
        elif name in WARP_REDUCES or (name == "reduce" and "cg" in full):
            self.warp["reduces"] += 1
        elif name in LDG_CALLS or name in CACHE_HINTS:
            if name in LDG_CALLS:
                self.g["ldg"] += 1
            else:
                self.g["cache_hint_calls"] += 1
            if arg_nodes and not in_callee:
                self._hinted_access(arg_nodes[0], is_store=name in HINT_STORES)
        elif name in PRECISE_FLOAT_MATH:
            self.math["transcendental_calls"] += 1
        elif name in DOUBLE_MATH:
            self.fp64["double_math_calls"] += 1
            if name not in ("fma", "fmod", "sqrt", "rsqrt"):
                self.math["transcendental_calls"] += 1
        elif name in FAST_INTRINSICS:
            self.math["fast_intrinsics"] += 1
        elif name in ("__pipeline_memcpy_async",):
            self.async_copy["cp_async"] = True
        elif name == "memcpy_async":
            self.async_copy["memcpy_async"] = True
        elif "wmma" in full or name in ("load_matrix_sync", "store_matrix_sync", "fill_fragment"):
            self.tensor["wmma"] = True
        elif name.startswith("cp_async_bulk") or name.startswith("cuTensorMap"):
            self.async_copy["tma"] = True
        elif "wgmma" in name:
            self.tensor["wgmma"] = True
        elif name in self.a.functions and name not in seen:
            callee = self.a.functions[name]
            self.visit(callee.child_by_field_name("body"), loop_depth, seen | {name}, in_callee=True)

    def _hinted_access(self, address, is_store: bool) -> None:
        """`__ldg(&p[i])`, `__stcs(p + i, v)`: classify the address like a subscript."""
        address = _strip(address)
        alias = self._pointer_alias(address)
        if alias is None:
            return
        vec = _vector_type_in(next((p["type"] for p in self.params if p["name"] == alias[0]), ""))
        self._count_access(alias[1], TYPE_BYTES[vec] if vec else 0, is_store, not is_store)

    def _atomic(self, target, loop_depth: int) -> None:
        self.atomics["total"] += 1
        if loop_depth:
            self.atomics["in_loops"] += 1
        node = _strip(target)
        if node is not None and node.type == "pointer_expression":
            node = _strip(node.child_by_field_name("argument"))
        while node is not None and node.type in ("subscript_expression", "binary_expression"):
            node = _strip(node.child_by_field_name("argument") if node.type == "subscript_expression"
                          else node.child_by_field_name("left"))
        name = _text(node) if node is not None and node.type == "identifier" else None
        self.atomics["shared" if name in self.scope.shared else "global"] += 1

    def _asm(self, text: str) -> None:
        # inline PTX is a string: the one place text matching is the right tool
        lowered = text.lower()
        if "wgmma" in lowered:
            self.tensor["wgmma"] = True
        elif re.search(r"\bmma\.sync", lowered):
            self.tensor["mma_sync"] = True
        if "cp.async.bulk" in lowered:
            self.async_copy["tma"] = True
        elif "cp.async" in lowered:
            self.async_copy["cp_async"] = True

    # -- control flow and arithmetic --

    def _branch(self, node, loop_depth: int) -> None:
        condition = node.child_by_field_name("condition")
        if condition is None:
            return
        if self.scope.info(condition).tx != NONE and not self._range_guard(condition):
            self.branches["thread_dependent"] += 1
            if loop_depth:
                self.branches["in_loops"] += 1

    def _range_guard(self, node) -> bool:
        """`i < n`, `x < cols && y < rows`, `r >= rows`: bounds checks that diverge only at the edge."""
        node = _strip(node)
        if node is None:
            return False
        if node.type == "condition_clause":
            named = node.named_children
            return bool(named) and self._range_guard(named[-1])
        if node.type != "binary_expression":
            return False
        op = _text(node.child_by_field_name("operator"))
        if op in ("&&", "||"):
            return self._range_guard(node.child_by_field_name("left")) and self._range_guard(node.child_by_field_name("right"))
        if op in ("<", "<=", ">", ">="):
            left = self.scope.info(node.child_by_field_name("left"))
            right = self.scope.info(node.child_by_field_name("right"))
            # an ordering test on plain indices (i < n, y < rows): lanes disagree in one warp at most
            return left.tx in (UNIT, NONE) and right.tx in (UNIT, NONE)
        return False

    def _division(self, node) -> None:
        op = _text(node.child_by_field_name("operator"))
        if op not in ("/", "%"):
            return
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if self._is_float(left) or self._is_float(right):
            if op == "/":
                self.math["float_divisions"] += 1
            return
        divisor = self.scope.constants.eval(right)
        if divisor is not None and divisor > 0 and divisor & (divisor - 1) == 0:
            return  # a power of two becomes a shift / mask
        self.math["int_div_mod"] += 1

    def _is_float(self, node) -> bool:
        while node is not None and node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[-1]
        if node is None:
            return False
        if node.type == "cast_expression":
            return _text(node.child_by_field_name("type")).strip() in FLOAT_TYPES
        if node.type == "number_literal":
            text = _text(node).lower()
            return not text.startswith("0x") and ("." in text or "e" in text or text.endswith("f"))
        if node.type == "identifier":
            return self.scope.types.get(_text(node), "").rstrip("*") in FLOAT_TYPES and not self.scope.types.get(
                _text(node), "").endswith("*")
        if node.type == "call_expression":
            name = _text(node.child_by_field_name("function")).split("::")[-1]
            return name in PRECISE_FLOAT_MATH | DOUBLE_MATH | FAST_INTRINSICS or name in ("fabsf", "fmaxf", "fminf", "sqrtf", "rsqrtf")
        if node.type == "binary_expression":
            return self._is_float(node.child_by_field_name("left")) or self._is_float(node.child_by_field_name("right"))
        if node.type == "subscript_expression":
            base = _strip(node.child_by_field_name("argument"))
            while base is not None and base.type == "subscript_expression":
                base = _strip(base.child_by_field_name("argument"))
            if base is not None and base.type == "identifier":
                name = _text(base)
                if name in self.scope.shared:
                    return self.scope.shared[name]["type"] in FLOAT_TYPES
                if name in self.local:
                    return self.local[name]["type"] in FLOAT_TYPES
                ptype = next((p["type"] for p in self.params if p["name"] == name), self.scope.types.get(name, ""))
                return any(t in FLOAT_TYPES for t in re.findall(r"\w+", ptype))
        if node.type == "field_expression":
            return False
        return False


def _parent_is_address_of(node) -> bool:
    parent = node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    return parent is not None and parent.type == "pointer_expression" and _text(parent.child_by_field_name("operator")) == "&"


def static_features(path_or_text: str | Path, name: str | None = None) -> dict[str, Any]:
    """Features of a `.cu` file (a path, or source text when it contains a newline).

    Raises InputError (one line) when the file is unreadable or holds no parseable kernel.
    """
    if isinstance(path_or_text, Path) or ("\n" not in str(path_or_text) and Path(str(path_or_text)).suffix):
        path = Path(path_or_text)
        try:
            source = path.read_bytes()
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except OSError as error:
            raise InputError(f"{path}: cannot read ({error.strerror})") from None
        label = name or str(path)
    else:
        source = str(path_or_text).encode()
        label = name or "<source>"
    if b"\x00" in source[:4096]:
        raise InputError(f"{label}: binary data, not CUDA source")
    return _Analyzer(source, label).run()
