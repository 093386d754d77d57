"""The per-kernel analysis: one walk over a `__global__` kernel's body (and the `__device__` functions
it calls, with their loop context) counting what the rules read.

Global accesses are classified by how their index varies across a warp's lanes (`indexing.py`);
shared-memory arrays are sized by constant folding (`constants.py`); each feature group of the
result (`global_access`, `shared`, `atomics`, `barriers`, `loops`, `fp64`, `math`, ...) is a block
of the evidence schema's `static.kernels.<name>`.
"""

from __future__ import annotations

import math
import re
from typing import Any

from skillbase.cuda import syntax
from skillbase.cuda.launchers import parameters
from skillbase.evidence.static.constants import Constants, is_double_literal
from skillbase.evidence.static.cuda_names import (
    ATOMICS,
    CACHE_HINTS,
    DOUBLE_MATH,
    DOUBLE_TYPES,
    EXP_CALLS,
    FAST_INTRINSICS,
    FENCES,
    FLOAT_TYPES,
    FMA_CALLS,
    HALF_TYPES,
    HINT_STORES,
    INT_TYPES,
    LDG_CALLS,
    LOOPS,
    PRECISE_FLOAT_MATH,
    SHUFFLES,
    SYNCTHREADS,
    TYPE_BYTES,
    VECTOR_TYPES,
    VOTES,
    WARP_REDUCES,
    vector_type_in,
)
from skillbase.evidence.static.indexing import (
    NONE,
    RUNTIME_STRIDE,
    STRIDED,
    UNIT,
    UNKNOWN,
    IndexInfo,
    Scope,
    constant_stride,
    index_sum,
    subscript_chain,
    subscript_index,
    unwrap,
    vector_cast,
)

# How deep a chain of __device__ calls is followed from a kernel (kernel -> helper -> ... -> the asm
# that issues an mma.sync): deep enough for real wrapper layers, bounded so that a generated chain of
# thousands of helpers cannot exhaust the analysis.
MAX_CALL_DEPTH = 8


def callee_name(call_text: str) -> str:
    """The bare name a call expression's function text calls: `ns::mma<16, 8>` -> `mma`,
    `warp.template load<T>` -> `load`, `p->run` -> `run`. Template arguments are dropped first (they
    may hold `::` or `.` themselves), then any qualifier, object or `template` keyword."""
    depth, bare = 0, []
    for char in call_text:
        if char == "<":
            depth += 1
        elif char == ">" and depth:
            depth -= 1
        elif not depth:
            bare.append(char)
    name = "".join(bare).split("::")[-1].split(".")[-1].split("->")[-1]
    return name.split()[-1] if name.split() else name


def accumulates(target, op: str, value) -> bool:
    """Does the assignment `target op value` add to what `target` held? `x += e`, `x -= e`, `x = x + e`,
    `x = e + x`, `x = x - e`, `x = fmaf(a, b, x)` (any fused multiply-add, the addend is its third argument)
    do; `x = e`, `x = x * s`, `x = e - x` and `x = fmaf(x, s, e)` do not. The target is compared as written
    (`acc[i][j]` is not `acc[j][i]`)."""
    if op in ("+=", "-="):
        return True
    if op != "=" or value is None:
        return False
    spelling = _spelling(target)
    return any(_spelling(addend) == spelling for addend in addends(value))


def addends(node) -> list[Any]:
    """The terms an expression adds with a positive sign: `a + b - c` -> [a, b]; `fmaf(x, y, a + b)` -> [a, b]."""
    node = unwrap(node)
    if node is None:
        return []
    if node.type == "binary_expression":
        operator = syntax.text(node.child_by_field_name("operator"))
        if operator == "+":
            return addends(node.child_by_field_name("left")) + addends(node.child_by_field_name("right"))
        if operator == "-":
            return addends(node.child_by_field_name("left"))
    if node.type == "call_expression" and callee_name(syntax.text(node.child_by_field_name("function"))) in FMA_CALLS:
        arguments = node.child_by_field_name("arguments")
        named = arguments.named_children if arguments is not None else []
        if len(named) == 3:
            return addends(named[2])
    return [node]


def _spelling(node) -> str:
    return re.sub(r"\s+", "", syntax.text(unwrap(node))) if unwrap(node) is not None else ""


def kernel_features(node, file_constants: Constants, functions: dict[str, Any],
                    bound: dict[str, str] | None = None, typedefs: dict[str, str] | None = None) -> dict[str, Any]:
    """The features of kernel definition `node`; `functions` are the file's other functions by name
    (device helpers the kernel may call), `file_constants` the file-scope constants. `bound`: template
    parameters of the kernel that name a function in this instantiation (`template <fn_ptr F>` profiled as
    `k<&helper>`: F -> "helper"), so that a call `F(...)` is followed into the helper that runs."""
    if bound:
        functions = dict(functions) | {param: functions[name] for param, name in bound.items() if name in functions}
    declared = parameters(node)
    params = [{"name": p.name, "type": p.declared, "pointer": p.pointer, "const": p.const, "restrict": p.restrict}
              for p in declared]
    pointer_params = {p.name for p in declared if p.pointer and p.name}
    constants = file_constants.child()
    shared = shared_arrays(node, constants)
    for helper in called_helpers(node, functions):
        # a `__shared__` array declared in a device helper the kernel calls (a block scan's warp totals,
        # CUDA samples' SharedMemory<T>) is the kernel's shared memory too: one per block, like its own
        found = shared_arrays(helper, constants.child())
        shared["arrays"] += found["arrays"]
        shared["dynamic"] = shared["dynamic"] or found["dynamic"]
        known = shared["static_bytes"] is not None and found["static_bytes"] is not None
        shared["static_bytes"] = shared["static_bytes"] + found["static_bytes"] if known else None
    scope = Scope(constants, pointer_params, {a["name"]: a for a in shared["arrays"]})
    for p in declared:
        if p.name:
            scope.types[p.name] = p.base
    template = template_value_params(node)
    # the features read a parameter's type through the file's aliases (`typedef __nv_bfloat16 T;`: `const T*` is a
    # 16-bit input); the params block keeps the type as declared
    resolved = [dict(p, type=resolve_aliases(p["type"], typedefs or {})) for p in params]
    features = KernelFeatures(functions, scope, resolved, compile_time=set(template))
    features.visit(node.child_by_field_name("body"), loop_depth=0,
                   seen={syntax.declarator_name(node.child_by_field_name("declarator"))})
    features.finish_pipeline()
    launch_bounds = None
    for child in node.children:
        if child.type == "launch_bounds":
            values = [constants.eval(c) for c in child.named_children]
            launch_bounds = {"max_threads": values[0] if values else None,
                             "min_blocks": values[1] if len(values) > 1 else None}
    out = {"line": syntax.line(node), "params": params, "launch_bounds": launch_bounds}
    shared["column_access"] = features.column_access
    shared.update(features.shared_result())
    out["shared"] = shared
    out.update(features.result())
    out["template"] = {"value_params": len(template)}
    return out


def called_helpers(function, functions: dict[str, Any]) -> list[Any]:
    """The file's functions that FUNCTION calls, directly or through others (at most MAX_CALL_DEPTH deep),
    each once, in the order first met."""
    found: dict[str, Any] = {}
    pending = [(function, 0)]
    while pending:
        node, depth = pending.pop(0)
        if depth >= MAX_CALL_DEPTH:
            continue
        for call in syntax.walk(node.child_by_field_name("body") or node):
            if call.type != "call_expression":
                continue
            target = call.child_by_field_name("function")
            name = callee_name(syntax.text(target)) if target is not None else ""
            if name in functions and name not in found and functions[name] is not function:
                found[name] = functions[name]
                pending.append((functions[name], depth + 1))
    return list(found.values())


def _template_parameters(function) -> list:
    """The parameter nodes of the `template <...>` that declares `function` (none for a plain function)."""
    parent = function.parent
    if parent is None or parent.type != "template_declaration":
        return []
    plist = parent.child_by_field_name("parameters") or next(
        (c for c in parent.children if c.type == "template_parameter_list"), None)
    return [c for c in plist.named_children if c.type != "comment"] if plist is not None else []


def template_params(function) -> list[str]:
    """The names of a kernel template's parameters in order, of any kind (`template <typename T, int N,
    fn_ptr F>` -> ["T", "N", "F"]): the positions of the template arguments in a demangled instance name."""
    names = []
    for child in _template_parameters(function):
        declarator = child.child_by_field_name("declarator") or child.child_by_field_name("name")
        name = syntax.declarator_name(declarator) if declarator is not None else None
        if name is None:   # `typename T` has no declarator field: its identifier is a plain child
            name = next((syntax.text(c) for c in child.named_children if c.type == "type_identifier"), None)
        names.append(name or "")
    return names


def template_value_params(function) -> list[str]:
    """Names of the non-type (integer) template parameters of a kernel template: compile-time
    constants whose values the launch site picks (`template <int BM, int BN> __global__ ...`)."""
    names = []
    for child in _template_parameters(function):
        if child.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        type_node = child.child_by_field_name("type")
        type_text = syntax.text(type_node) if type_node is not None else ""
        if type_text in INT_TYPES | {"uint", "bool", "auto"}:
            name = syntax.declarator_name(child.child_by_field_name("declarator"))
            if name:
                names.append(name)
    return names


def shared_arrays(function, constants: Constants) -> dict[str, Any]:
    """The kernel's `__shared__` arrays (sizes folded) and whether it uses dynamic shared memory; function-scope
    constants met on the way are added to `constants`."""
    arrays, dynamic = [], False
    body = function.child_by_field_name("body")
    for node in syntax.walk(body):
        if node.type != "declaration":
            continue
        if "__shared__" not in {syntax.text(c) for c in node.children if c.type == "type_qualifier"}:
            if not syntax.inside(node, LOOPS):  # function-scope `const int C = 4;` sizes later arrays
                constants.add_declaration(node)
            continue
        extern = any(syntax.text(c) == "extern" for c in node.children if c.type == "storage_class_specifier")
        type_text = syntax.text(node.child_by_field_name("type"))
        for declarator in node.children_by_field_name("declarator"):
            found = array_dims(declarator, constants)
            name, dims = found if found else (syntax.declarator_name(declarator), [])
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


def array_dims(declarator, constants: Constants) -> tuple[str | None, list[int | None]] | None:
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
    return syntax.declarator_name(node), dims


class KernelFeatures:
    """One walk over a kernel body (and the device functions it calls) counting every feature."""

    def __init__(self, functions: dict[str, Any], scope: Scope, params: list[dict[str, Any]],
                 compile_time: set[str] | None = None):
        self.functions = functions
        self.scope = scope
        self.params = params
        self.compile_time = compile_time or set()   # template value parameters: constants of unknown value
        self.g = {"loads": 0, "stores": 0, "vector_loads": 0, "vector_stores": 0, "max_vector_bytes": 0,
                  "ldg": 0, "cache_hint_calls": 0, "coalesced": 0, "strided": 0, "broadcast": 0, "unknown": 0,
                  "thread_invariant_loads": 0, "gathered": 0,
                  "loads_in_loops": 0, "pairwise_loads": 0, "reread_loops": 0, "staging_loops": 0,
                  "struct_field_accesses": 0, "data_indexed_atomics": 0, "loads_in_store_free_loops": 0}
        self.reduction = {"tree_loops": 0, "tree_loops_below_warp": 0, "modulo_branches": 0}
        self.smem = {"strided_index": 0}
        self._smem_subscripts: dict[str, set[str]] = {}   # shared array -> distinct subscript texts
        self._smem_rw: dict[str, list[int]] = {}           # shared array -> [reads, writes]
        self._smem_thread: dict[str, bool] = {}            # shared array -> every subscript depends on a thread
        self.roles: dict[str, set[str]] = {}               # local array -> {"accumulated", "from_shared"}
        self.defs: dict[str, Any] = {}                     # local variable -> its initialiser
        self._groups: dict[str, str] = {}                  # variable -> the cooperative-group call assigned to it
        self._depth = 0                                    # loop depth of the node being visited
        self._loop_vars: list[str] = []                    # counters of the enclosing loops
        self._staged = 0                                   # shared stores of global values seen so far
        self._top_loads: set[str] | None = None            # parameters loaded inside the current top loop
        self._top_loop_loads: list[set[str]] = []          # ... of each earlier top-level loop (pass)
        self._top_loop_reread: list[bool] = []             # ... whether that pass was counted as a re-read
        self._broadcast_walks: dict[str, int] = {}         # param -> uniform loads walking it in run-time loops
        self._lane_loaded: set[str] = set()                # params loaded at a lane-varying index
        self._loop_counts: list[list[int]] = []            # per open loop: [loads, stores, store-free loads]
        self.atomics = {"global": 0, "shared": 0, "total": 0, "in_loops": 0}
        self.barriers = {"syncthreads": 0, "in_loops": 0, "syncwarp": 0, "grid_sync": 0, "fences": 0}
        self.warp = {"shuffles": 0, "votes": 0, "reduces": 0}
        # data_bound: loops whose trip count reads a value loaded from memory (CSR row extents, per-item counts);
        # thread_data_bound: of those, the ones whose bound is loaded at an index that depends on the thread, so
        # threads or warps of one block run different trip counts and finish apart
        self.loops = {"count": 0, "max_depth": 0, "unroll_pragmas": 0, "constant_trip": 0,
                      "data_bound": 0, "thread_data_bound": 0}
        self._data_vars: dict[str, bool] = {}             # local -> holds a loaded value (True: at a thread's index)
        self.tensor = {"wmma": False, "mma_sync": False, "wgmma": False}
        self.async_copy = {"cp_async": False, "memcpy_async": False, "tma": False}
        # where copies and MMAs are issued: (what, loop depth) per call site, to tell a producer
        # branch (one arm loops over async copies, the MMAs run elsewhere) from a single issuing thread
        self._issues: list[tuple[str, int]] = []
        self.pipeline = {"producer_branch": False, "setmaxnreg": False}
        self._producer_arms: list[int] = []
        self.local: dict[str, dict[str, Any]] = {}
        self.fp64 = {"double_decls": 0, "double_literals": 0, "double_math_calls": 0}
        self.math = {"transcendental_calls": 0, "fast_intrinsics": 0, "float_divisions": 0, "int_div_mod": 0,
                     "exp_calls": 0}
        self.branches = {"thread_dependent": 0, "in_loops": 0}
        self.bits = {"runtime_shift_fields": 0}
        self.column_access = 0
        self.done: set[int] = set()   # store targets already counted, not to be counted as loads
        # pointer parameters seen loaded / written (stores, atomics): a read-only input is one the kernel only
        # loads, or whose pointee is const
        self._loaded_params: set[str] = set()
        self._written_params: set[str] = set()
        for p in params:
            if p["type"] and any(t in DOUBLE_TYPES for t in re.findall(r"\w+", p["type"])):
                self.fp64["double_decls"] += 1
            if "CUtensorMap" in (p["type"] or ""):
                self.async_copy["tma"] = True

    def result(self) -> dict[str, Any]:
        pointers = [p for p in self.params if p["pointer"]]
        # read-only inputs: a const pointee, or a pointer the kernel loads and never writes. An output (stored
        # through, atomics) is no input: counting it made every kernel with an output look short of one
        # const __restrict__ (LLM run: rms_norm with x and w const __restrict__ and y written read 3 vs 2), and
        # a pointer whose accesses the analysis does not see is not evidence either way
        inputs = [p for p in pointers if p["const"] or (p["name"] in self._loaded_params
                                                         and p["name"] not in self._written_params)]
        g = dict(self.g)
        g["pointer_inputs"] = len(inputs)
        g["const_restrict_inputs"] = sum(1 for p in inputs if p["const"] and p.get("restrict"))
        dependent = g["coalesced"] + g["strided"] + g["unknown"]
        g["threadx_fastest"] = None if dependent == 0 else (g["strided"] == 0 and g["coalesced"] > 0 and
                                                            g["unknown"] <= g["coalesced"])
        # all-pairs: the array every thread walks is the one each thread also reads at its own
        # index (n-body, pairwise distances); a walked array read nowhere else is a small table
        # (filter taps, coefficients) or a GEMM operand
        g["pairwise_loads"] = sum(n for param, n in self._broadcast_walks.items() if param in self._lane_loaded)
        g["half_pointer_inputs"] = sum(1 for p in pointers
                                       if any(t in HALF_TYPES for t in re.findall(r"\w+", p["type"] or "")))
        registers = {"accumulator_arrays": sum(1 for r in self.roles.values() if "accumulated" in r),
                     "fragment_arrays": sum(1 for r in self.roles.values() if "from_shared" in r)}
        return {"global_access": g, "atomics": self.atomics, "barriers": self.barriers,
                "warp_intrinsics": self.warp, "loops": self.loops, "tensor_cores": self.tensor,
                "async_copy": self.async_copy, "pipeline": self.pipeline,
                "local_arrays": list(self.local.values()), "fp64": self.fp64,
                "math": self.math, "branches": self.branches, "reduction": self.reduction,
                "registers": registers, "bits": self.bits}

    def shared_result(self) -> dict[str, Any]:
        """Shared-memory access facts found on the walk (added to the `shared` block)."""
        private = sum(1 for name, subs in self._smem_subscripts.items()
                      if len(subs) == 1 and self._smem_thread.get(name) and all(self._smem_rw[name]))
        return {"array_count": len(self.scope.shared), "strided_index": self.smem["strided_index"],
                "thread_private_arrays": private}

    # -- traversal --

    def visit(self, node, loop_depth: int, seen: set[str], in_callee: bool = False) -> None:
        if node is None:
            return
        self._depth = loop_depth
        kind = node.type
        if kind in LOOPS:
            # an unbraced loop body's own `#pragma unroll` is not in the tree (syntax.parse leaves it out)
            self.loops["unroll_pragmas"] += sum(1 for a in syntax.hidden_pragmas(node) if a.startswith("unroll"))
            self._loop(node, loop_depth, seen, in_callee)
            return
        if kind == "field_expression" and not in_callee:
            self._field(node)
        if kind == "declaration":
            self._declaration(node, in_callee)
        elif kind == "preproc_call":
            directive = syntax.text(node.child_by_field_name("directive"))
            argument = syntax.text(node.child_by_field_name("argument")) if node.child_by_field_name("argument") else ""
            if directive == "#pragma" and argument.strip().startswith("unroll"):
                self.loops["unroll_pragmas"] += 1
        elif kind == "assignment_expression":
            self._assignment(node, loop_depth, in_callee)
        elif kind == "update_expression":
            pass
        elif kind == "call_expression":
            self._call(node, loop_depth, seen, in_callee)
        elif kind in ("gnu_asm_expression", "asm_statement"):
            self._asm(syntax.text(node))
        elif kind == "subscript_expression":
            self._subscript(node, is_store=False, is_load=True, in_callee=in_callee)
        elif kind == "pointer_expression":
            self._deref(node, is_store=False, in_callee=in_callee)
        elif kind == "number_literal":
            if is_double_literal(syntax.text(node)):
                self.fp64["double_literals"] += 1
        elif kind in ("qualified_identifier", "namespace_identifier"):
            text = syntax.text(node)
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
            if kind == "if_statement":
                self._arms(node, loop_depth, seen, in_callee)
                return
        elif kind == "binary_expression":
            self._division(node)
            self._bit_field(node)
        if kind == "subscript_expression":
            # visit the index expressions (nested loads) of every level of s[a][b], not the array
            current = node
            while current is not None and current.type == "subscript_expression":
                for child in current.children:
                    if child.type == "subscript_argument_list":
                        self.visit(child, loop_depth, seen, in_callee)
                current = unwrap(current.child_by_field_name("argument"))
                if current is not None and current.type not in ("subscript_expression", "identifier"):
                    self.visit(current, loop_depth, seen, in_callee)
            return
        for child in node.children:
            self.visit(child, loop_depth, seen, in_callee)

    def _loop(self, node, loop_depth: int, seen: set[str], in_callee: bool) -> None:
        depth = loop_depth + 1
        self.loops["count"] += 1
        self.loops["max_depth"] = max(self.loops["max_depth"], depth)
        variable = None
        if node.type == "for_statement":
            variable = self._for_variable(node)
            if variable and self._constant_trip(node, variable):
                self.loops["constant_trip"] += 1
                self.scope.loop_vars_constant.add(variable)
        tree = self._tree_step(node, variable) if variable else None
        trip = self._trip_dependence(node, variable)
        if trip is not None:
            self.loops["data_bound"] += 1
            if trip:
                self.loops["thread_data_bound"] += 1
        barriers, staged = self.barriers["syncthreads"], self._staged
        top = loop_depth == 0 and not in_callee
        if top:
            self._top_loads = set()
        if variable:
            self._loop_vars.append(variable)
        if not in_callee:
            self._loop_counts.append([0, 0, 0])
        body = node.child_by_field_name("body")
        for child in node.children:
            # header parts (initialiser, condition, update) count at the loop's own level
            self.visit(child, depth if body is not None and child.id == body.id else loop_depth, seen, in_callee)
        if variable:
            self._loop_vars.pop()
        if not in_callee:
            loads, stores, counted = self._loop_counts.pop()
            if stores == 0:
                self.g["loads_in_store_free_loops"] += loads - counted   # a loop that only loads and accumulates
                counted = loads
            if self._loop_counts:
                self._loop_counts[-1][0] += loads
                self._loop_counts[-1][1] += stores
                self._loop_counts[-1][2] += counted
        synced = self.barriers["syncthreads"] > barriers
        if synced and self._staged > staged:
            self.g["staging_loops"] += 1    # global -> shared copies and a barrier: a tile loop
        if tree is not None and synced:
            self.reduction["tree_loops"] += 1
            if tree:
                self.reduction["tree_loops_below_warp"] += 1
        if top:
            loaded = self._top_loads or set()
            if self._top_loop_loads and continues_previous_loop(node):
                # the remainder of an unrolled loop resumes its index: one pass with it, not a second
                passed = self._top_loop_loads[-1] = self._top_loop_loads[-1] | loaded
                if not self._top_loop_reread[-1] and any(passed & earlier for earlier in self._top_loop_loads[:-1]):
                    self.g["reread_loops"] += 1
                    self._top_loop_reread[-1] = True
            else:
                reread = bool(loaded) and any(loaded & earlier for earlier in self._top_loop_loads)
                if reread:
                    self.g["reread_loops"] += 1   # a later pass reads an input an earlier pass already read
                self._top_loop_loads.append(loaded)
                self._top_loop_reread.append(reread)
            self._top_loads = None

    def _trip_dependence(self, node, variable: str | None) -> bool | None:
        """Does loop NODE's trip count read a value loaded from memory? None when its header reads none; else
        whether some such load's index depends on the thread (`for (j = rowptr[row]; j < rowptr[row + 1]; ++j)`
        with `row` from threadIdx: True; a bound loaded at `blockIdx.x` or a scalar `*n`: False). The counter a
        `for` declares is read in its condition as the initialiser set it, so the initialiser speaks for it."""
        if node.type == "for_range_loop":
            return None
        init = node.child_by_field_name("initializer") if node.type == "for_statement" else None
        found = None
        if init is not None:
            if init.type == "declaration":
                values = [d.child_by_field_name("value") for d in init.children_by_field_name("declarator")
                          if d.type == "init_declarator"]
            else:   # `j = start`: what is assigned, not the counter's former value
                values = [init.child_by_field_name("right") if init.type == "assignment_expression" else init]
            for value in values:
                found = _either(found, self._data_dependence(value))
        skip = {variable} if init is not None and variable else set()
        return _either(found, self._data_dependence(node.child_by_field_name("condition"), skip))

    def _data_dependence(self, node, skip: set[str] | frozenset[str] = frozenset()) -> bool | None:
        """Whether expression NODE reads a value loaded from global or shared memory (directly, or through a local
        that holds one): None when it reads none, else whether a load's index depends on the thread."""
        found = None
        for current in syntax.walk(node) if node is not None else ():
            if current.type == "identifier" and syntax.text(current) in self._data_vars:
                if syntax.text(current) not in skip:
                    found = _either(found, self._data_vars[syntax.text(current)])
            elif current.type == "subscript_expression":
                found = _either(found, self._load_dependence(current))
            elif current.type == "pointer_expression" and syntax.text(current.child_by_field_name("operator")) == "*":
                alias = self._pointer_alias(unwrap(current.child_by_field_name("argument")))
                if alias is not None:
                    found = _either(found, alias[1].thread)
        return found

    def _load_dependence(self, node) -> bool | None:
        """For subscript NODE: None unless it loads from a kernel pointer or a shared array; else whether its index
        depends on the thread. Local (register) arrays hold no loaded bound of their own."""
        chain, base, name = subscript_chain(node)
        if name in self.scope.shared:
            return any(self.scope.info(index).thread for index in chain)
        if name in self.local:
            return None
        param, offset, _ = self._resolve_base(unwrap(node.child_by_field_name("argument")) if len(chain) == 1
                                              else base)
        if param is None:
            return None
        return index_sum(offset, self.scope.info(chain[-1])).thread or any(
            self.scope.info(index).thread for index in chain[:-1])

    def _tree_step(self, node, variable: str) -> bool | None:
        """A reduction-tree loop: the counter halves (`s >>= 1`, `s /= 2`) or doubles (`s *= 2`,
        `s <<= 1`) each step. Returns whether the tree keeps going below a warp (the last steps
        run with fewer than 32 active threads: a halving loop that stops under 32, or any doubling
        loop), or None when the loop is not a tree."""
        update = unwrap(node.child_by_field_name("update"))
        if update is None or update.type != "assignment_expression":
            return None
        if syntax.text(update.child_by_field_name("left")).strip() != variable:
            return None
        op = syntax.text(update.child_by_field_name("operator"))
        right = update.child_by_field_name("right")
        value = self.scope.constants.eval(right)
        halving = (op == ">>=" and value == 1) or (op == "/=" and value == 2)
        doubling = (op == "<<=" and value == 1) or (op == "*=" and value == 2)
        if op == "=" and right is not None and unwrap(right) is not None and unwrap(right).type == "binary_expression":
            inner = unwrap(right)
            inner_op = syntax.text(inner.child_by_field_name("operator"))
            operand = self.scope.constants.eval(inner.child_by_field_name("right"))
            if syntax.text(inner.child_by_field_name("left")).strip() == variable:
                halving = (inner_op == ">>" and operand == 1) or (inner_op == "/" and operand == 2)
                doubling = (inner_op == "<<" and operand == 1) or (inner_op == "*" and operand == 2)
        if not (halving or doubling):
            return None
        if doubling:
            return True
        condition = unwrap(node.child_by_field_name("condition"))
        if condition is None or condition.type != "binary_expression":
            return True
        left, right = condition.child_by_field_name("left"), condition.child_by_field_name("right")
        bound = right if syntax.text(left).strip() == variable else left
        stop = self.scope.constants.eval(bound)
        return stop is None or stop < 32

    def _for_variable(self, node) -> str | None:
        init = node.child_by_field_name("initializer")
        if init is None:
            return None
        if init.type == "declaration":
            for declarator in init.children_by_field_name("declarator"):
                return syntax.declarator_name(declarator)
        if init.type == "assignment_expression":
            return syntax.text(init.child_by_field_name("left"))
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
        if init is not None and start is None:
            value = None
            if init.type == "declaration":
                for declarator in init.children_by_field_name("declarator"):
                    if declarator.type == "init_declarator":
                        value = declarator.child_by_field_name("value")
            elif init.type == "assignment_expression":
                value = init.child_by_field_name("right")
            if value is not None and self._static_index(value):
                start = 0   # a compile-time start (template parameter): the value is unknown but fixed
        if start is None or condition is None or condition.type != "binary_expression":
            return False
        left, right = condition.child_by_field_name("left"), condition.child_by_field_name("right")
        if syntax.text(left) == variable:
            return self.scope.constants.eval(right) is not None or self._compile_time(right)
        if syntax.text(right) == variable:
            return self.scope.constants.eval(left) is not None or self._compile_time(left)
        return False

    def _compile_time(self, node) -> bool:
        """Known when the kernel is compiled: constants and template value parameters (not loop counters)."""
        if node is None:
            return False
        names = [syntax.text(c) for c in syntax.walk(node) if c.type == "identifier"]
        if any(c.type in ("field_expression", "call_expression", "subscript_expression") for c in syntax.walk(node)):
            return False
        return bool(names) and all(n in self.scope.constants.values or n in self.compile_time for n in names)

    def _declaration(self, node, in_callee: bool) -> None:
        type_node = node.child_by_field_name("type")
        type_text = syntax.text(type_node) if type_node is not None else ""
        qualifiers = {syntax.text(c) for c in node.children if c.type in ("type_qualifier", "storage_class_specifier")}
        if type_text in DOUBLE_TYPES:
            self.fp64["double_decls"] += len(node.children_by_field_name("declarator"))
        if "__shared__" in qualifiers:
            return
        if {"const", "constexpr"} & qualifiers:
            self.scope.constants.add_declaration(node)
        for declarator in node.children_by_field_name("declarator"):
            name = syntax.declarator_name(declarator)
            if not name:
                continue
            self.scope.types[name] = type_text + ("*" if "*" in syntax.text(declarator).split("=")[0] else "")
            dims = array_dims(declarator, self.scope.constants)
            if dims is not None and not in_callee and "static" not in qualifiers:
                elements = math.prod(dims[1]) if all(d is not None for d in dims[1]) else None  # type: ignore[arg-type]
                element = TYPE_BYTES.get(type_text)
                self.local[name] = {"name": name, "type": type_text, "elements": elements,
                                    "bytes": elements * element if elements is not None and element else None,
                                    "dynamic_index": False}
                continue
            self._data_vars.pop(name, None)
            if declarator.type == "init_declarator":
                value = declarator.child_by_field_name("value")
                if value is None or value.type in ("argument_list", "initializer_list"):
                    continue
                loaded = self._data_dependence(value)
                if loaded is not None:
                    self._data_vars[name] = loaded
                if not in_callee:
                    self.defs.setdefault(name, value)
                stripped = unwrap(value)
                # a local pointer into a kernel parameter keeps the parameter's identity
                if "*" in syntax.text(declarator).split("=")[0]:
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
            name = syntax.text(node)
            if name in self.scope.pointer_params:
                return name, IndexInfo()
            return self.scope.aliases.get(name)
        if node.type == "binary_expression" and syntax.text(node.child_by_field_name("operator")) in ("+", "-"):
            left, right = unwrap(node.child_by_field_name("left")), node.child_by_field_name("right")
            base = self._pointer_alias(left)
            if base is not None:
                return base[0], index_sum(base[1], self.scope.info(right))
        if node.type == "pointer_expression" and syntax.text(node.child_by_field_name("operator")) == "&":
            inner = unwrap(node.child_by_field_name("argument"))
            if inner is not None and inner.type == "subscript_expression":
                base = self._pointer_alias(unwrap(inner.child_by_field_name("argument")))
                if base is not None:
                    return base[0], index_sum(base[1], self.scope.info(subscript_index(inner)))
        return None

    def _assignment(self, node, loop_depth: int, in_callee: bool) -> None:
        left = unwrap(node.child_by_field_name("left"))
        op = syntax.text(node.child_by_field_name("operator"))
        accumulating = accumulates(left, op, node.child_by_field_name("right"))
        if left is not None and left.type == "identifier":
            name = syntax.text(left)
            right_text = syntax.text(node.child_by_field_name("right"))
            if op == "=" and ("partition" in right_text or "this_" in right_text or "coalesced" in right_text):
                # `cg::thread_block_tile<32> t = cg::tiled_partition<32>(b);` parses as a comparison and an
                # assignment (the template type is ambiguous to the grammar): the call names the group
                self._groups[name] = right_text
            loaded = self._data_dependence(node.child_by_field_name("right"))
            if loaded is not None:
                self._data_vars[name] = _either(self._data_vars.get(name), loaded)
            if op == "=":
                self.scope.assign(name, self.scope.info(node.child_by_field_name("right")), first=False)
            elif op in ("+=", "-=") and name in self.scope.vars:
                increment = self.scope.info(node.child_by_field_name("right"))
                self.scope.assign(name, index_sum(self.scope.vars[name], increment), first=True)
        if left is not None and left.type == "field_expression":  # p[i].x = v stores into p[i]
            inner = unwrap(left.child_by_field_name("argument"))
            left = inner if inner is not None and inner.type == "subscript_expression" else left
        if left is not None and left.type == "subscript_expression":
            self._roles(left, op, node.child_by_field_name("right"), loop_depth, accumulating, in_callee)
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
        stripped = unwrap(node)
        cast = vector_cast(stripped) if stripped is not None else None
        if cast is not None:
            stripped, vector = unwrap(cast[0]), cast[1]
        if stripped is None:
            return None, IndexInfo(), vector
        alias = self._pointer_alias(stripped)
        if alias is None:
            return None, IndexInfo(), vector
        param = alias[0]
        if not vector:
            ptype = next((p["type"] for p in self.params if p["name"] == param), "")
            vec = vector_type_in(ptype)
            vector = TYPE_BYTES[vec] if vec else 0
        return param, alias[1], vector

    def _subscript(self, node, is_store: bool, is_load: bool, in_callee: bool) -> None:
        if node.id in self.done:
            return
        base_node = node.child_by_field_name("argument")
        # nested subscripts s[a][b]: the array is the innermost argument
        chain, stripped, name = subscript_chain(node)
        index_node = chain[-1]
        if name in self.scope.shared:
            self._shared_access(self.scope.shared[name], chain)
            self._shared_pattern(name, chain, is_store, is_load, address=parent_is_address_of(node))
            return
        if name in self.local:
            if any(not self._static_index(i) for i in chain):
                self.local[name]["dynamic_index"] = True
            return
        if parent_is_address_of(node):
            return  # &p[i]: an address; counted where it is used (__ldg, atomics, casts)
        param, offset, vector = self._resolve_base(base_node if len(chain) == 1 else stripped)
        if param is None:
            return
        info = index_sum(offset, self.scope.info(index_node))
        self._count_access(info, vector, is_store, is_load, param=param, index=index_node)

    def _count_access(self, info: IndexInfo, vector: int, is_store: bool, is_load: bool,
                      param: str | None = None, index=None) -> None:
        if is_load and self._depth:
            self.g["loads_in_loops"] += 1
            if (info.tx == NONE and param is not None and index is not None
                    and self._mentions_loop_var(index, runtime_only=True)):
                # every lane reads the same element, a new one each step of a run-time loop
                self._broadcast_walks[param] = self._broadcast_walks.get(param, 0) + 1
        if is_load and info.tx == UNKNOWN and index is not None and self._gathers(index):
            self.g["gathered"] += 1
        if is_load and info.tx == NONE and not info.thread:
            # the same element for every thread of the block (a table of taps or coefficients), not merely for
            # a warp (a GEMM's A[row * K + k] with row from threadIdx.y): what __constant__ can hold
            self.g["thread_invariant_loads"] += 1
        if is_load and param is not None and info.tx in (UNIT, STRIDED):
            self._lane_loaded.add(param)
        if is_load and param is not None and self._top_loads is not None:
            self._top_loads.add(param)
        if param is not None:
            if is_load:
                self._loaded_params.add(param)
            if is_store:
                self._written_params.add(param)
        if self._loop_counts:
            self._loop_counts[-1][0] += 1 if is_load else 0
            self._loop_counts[-1][1] += 1 if is_store else 0
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

    def _gathers(self, index) -> bool:
        """Whether a lane-varying index is data: a value loaded at a thread's index (`x[col[k]]`, `x[c]` with
        `c = col[k]`), so each lane's address is wherever the data points and no thread mapping coalesces it. A
        loop counter read outside every inner subscript makes it a walk from a loaded base instead
        (`val[k]` for `k` from `rowptr[row]`, `val[rowptr[row] + k]`), which a warp per row does coalesce."""
        counters = set(self._loop_vars)
        inner = {id(n) for sub in syntax.walk(index) if sub.type == "subscript_expression"
                 for n in syntax.walk(sub)}
        if any(n.type == "identifier" and syntax.text(n) in counters and id(n) not in inner
               for n in syntax.walk(index)):
            return False
        return self._data_dependence(index, skip=counters) is True

    def _deref(self, node, is_store: bool, in_callee: bool) -> None:
        """`*reinterpret_cast<float4*>(&p[i])`, `*(p + i)`: a global access through a pointer."""
        if node.id in self.done or syntax.text(node.child_by_field_name("operator")) != "*":
            return
        argument = unwrap(node.child_by_field_name("argument"))
        vector = 0
        cast = vector_cast(argument) if argument is not None else None
        if cast is not None:
            argument, vector = unwrap(cast[0]), cast[1]
        alias = self._pointer_alias(argument)
        if alias is None:
            return
        if not vector:
            vec = vector_type_in(next((p["type"] for p in self.params if p["name"] == alias[0]), ""))
            vector = TYPE_BYTES[vec] if vec else 0
        self._count_access(alias[1], vector, is_store, not is_store, param=alias[0])

    def _static_index(self, node) -> bool:
        """Known at compile time after unrolling: constants and counters of constant-trip loops."""
        if node is None:
            return True
        for child in syntax.walk(node):
            if child.type == "identifier":
                name = syntax.text(child)
                if (name not in self.scope.constants.values and name not in self.scope.loop_vars_constant
                        and name not in self.compile_time):
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
            for node in syntax.walk(index):
                if node.type == "binary_expression" and syntax.text(node.child_by_field_name("operator")) == "*":
                    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
                    for varying, factor in ((left, right), (right, left)):
                        stride = self.scope.constants.eval(factor)
                        if self.scope.info(varying).tx == UNIT and stride and (stride * element // 4) % 32 == 0:
                            self.column_access += 1
                            return

    def _shared_pattern(self, name: str, chain: list, is_store: bool, is_load: bool, address: bool) -> None:
        """Per shared array: its distinct subscripts (one subscript that depends on the thread, read
        and written, is storage private to each thread), and scalar accesses whose lane stride is
        a run-time or even value (`sdata[2 * s * tid]`): bank conflicts that no fixed padding removes."""
        text = "][".join(" ".join(syntax.text(i).split()) if i is not None else "" for i in chain)
        self._smem_subscripts.setdefault(name, set()).add(text)
        rw = self._smem_rw.setdefault(name, [0, 0])
        rw[0] += 1 if is_load or address else 0
        rw[1] += 1 if is_store or address else 0
        thread = all(i is not None and self._thread_dependent(i) for i in chain)
        self._smem_thread[name] = self._smem_thread.get(name, True) and thread
        if len(chain) == 1 and chain[0] is not None and not address:
            stride = constant_stride(self.scope, chain[0], self.defs, fixed=self.compile_time)
            element = TYPE_BYTES.get(self.scope.shared[name]["type"], 4)
            if stride == RUNTIME_STRIDE or (stride is not None and stride > 1 and (stride * element // 4) % 2 == 0
                                            and (stride * element // 4) % 32 != 0):
                self.smem["strided_index"] += 1

    def _thread_dependent(self, node) -> bool:
        info = self.scope.info(node)
        if info.thread or info.tx != NONE:
            return True
        for child in syntax.walk(node):
            if child.type == "identifier" and syntax.text(child) in self.defs:
                value = self.defs[syntax.text(child)]
                if self.scope.info(value).thread:
                    return True
        return False

    def _mentions_loop_var(self, node, runtime_only: bool = False) -> bool:
        names = {syntax.text(c) for c in syntax.walk(node) if c.type == "identifier"}
        for name in list(names):
            if name in self.defs:   # one level of local definitions: `int idx = tile * B + j`
                names |= {syntax.text(c) for c in syntax.walk(self.defs[name]) if c.type == "identifier"}
        counters = set(self._loop_vars)
        if runtime_only:
            counters -= self.scope.loop_vars_constant
        return bool(names & counters)

    def _roles(self, left, op: str, right, loop_depth: int, accumulating: bool, in_callee: bool = False) -> None:
        """Register arrays: accumulated in a loop (`acc[i] += ...`, `acc[i] = fmaf(a, b, acc[i])`: a per-thread
        output tile) or
        loaded from shared memory (`a[i] = As[...]`: register fragments of a tile); and shared stores of
        global values (tile staging, also in a helper: its parameters are bound to the kernel's arrays)."""
        base = unwrap(left.child_by_field_name("argument"))
        while base is not None and base.type == "subscript_expression":
            base = unwrap(base.child_by_field_name("argument"))
        name = syntax.text(base) if base is not None and base.type == "identifier" else None
        if name is not None and name in self.scope.shared:
            if right is not None and self._reads_global(right):
                self._staged += 1
            return
        if in_callee or name is None or name not in self.local:
            return
        roles = self.roles.setdefault(name, set())
        if accumulating and loop_depth:
            roles.add("accumulated")
        value = unwrap(right)
        while value is not None and value.type == "subscript_expression":
            value = unwrap(value.child_by_field_name("argument"))
        if op == "=" and value is not None and value.type == "identifier" and syntax.text(value) in self.scope.shared:
            roles.add("from_shared")

    def _reads_global(self, node) -> bool:
        """Does expression `node` load a kernel pointer parameter (directly, through an alias or __ldg)?"""
        for child in syntax.walk(node):
            if child.type == "subscript_expression":
                base = unwrap(child.child_by_field_name("argument"))
                while base is not None and base.type == "subscript_expression":
                    base = unwrap(base.child_by_field_name("argument"))
                if base is not None and self._pointer_alias(base) is not None:
                    return True
            elif child.type == "pointer_expression" and syntax.text(child.child_by_field_name("operator")) == "*":
                argument = unwrap(child.child_by_field_name("argument"))
                cast = vector_cast(argument) if argument is not None else None
                if cast is not None:
                    argument = unwrap(cast[0])
                if argument is not None and self._pointer_alias(argument) is not None:
                    return True
            elif child.type == "call_expression":
                function = syntax.text(child.child_by_field_name("function")).split("::")[-1]
                if function in LDG_CALLS or function in CACHE_HINTS:
                    return True
        return False

    def _field(self, node) -> None:
        """`p[i].x` on a pointer to a user struct (not a built-in vector): one field of an array of structs."""
        argument = unwrap(node.child_by_field_name("argument"))
        if argument is None or argument.type != "subscript_expression":
            return
        base = unwrap(argument.child_by_field_name("argument"))
        alias = self._pointer_alias(base) if base is not None else None
        if alias is None:
            return
        ptype = next((p["type"] for p in self.params if p["name"] == alias[0]), "") or ""
        words = [w for w in re.findall(r"[A-Za-z_]\w*", ptype) if w not in ("const", "__restrict__", "restrict",
                                                                            "volatile", "struct", "unsigned")]
        if words and not any(w in TYPE_BYTES or w in VECTOR_TYPES for w in words):
            self.g["struct_field_accesses"] += 1

    # -- calls --

    def _call(self, node, loop_depth: int, seen: set[str], in_callee: bool) -> None:
        function = node.child_by_field_name("function")
        full = syntax.text(function)
        name = callee_name(full)
        args = node.child_by_field_name("arguments")
        arg_nodes = args.named_children if args is not None else []
        if name in EXP_CALLS:
            self.math["exp_calls"] += 1
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
        elif name == "sync" and ("grid" in full.lower() or (arg_nodes and "grid" in syntax.text(arg_nodes[0]).lower())):
            self.barriers["grid_sync"] += 1
        elif name == "sync" and self._group_of(full, arg_nodes) == "block":
            # cooperative groups' block barrier (`cg::sync(block)`, `block.sync()`) is __syncthreads
            self.barriers["syncthreads"] += 1
            if loop_depth:
                self.barriers["in_loops"] += 1
        elif name == "sync" and self._group_of(full, arg_nodes) == "warp":
            self.barriers["syncwarp"] += 1
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
            if arg_nodes:
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
            self._issues.append(("copy", loop_depth))
        elif name == "memcpy_async":
            self.async_copy["memcpy_async"] = True
            self._issues.append(("copy", loop_depth))
        elif "wmma" in full or name in ("load_matrix_sync", "store_matrix_sync", "fill_fragment"):
            self.tensor["wmma"] = True
            if name == "mma_sync":
                self._issues.append(("mma", loop_depth))
        elif name.startswith("cp_async_bulk") or name.startswith("cuTensorMap"):
            self.async_copy["tma"] = True
            if name.startswith("cp_async_bulk"):
                self._issues.append(("copy", loop_depth))
        elif "wgmma" in name:
            self.tensor["wgmma"] = True
            self._follow(name, loop_depth, seen, arg_nodes)   # a wrapper: its asm says whether it issues the MMA
        else:
            self._follow(name, loop_depth, seen, arg_nodes)

    def _group_of(self, full: str, arg_nodes: list) -> str | None:
        """The cooperative group a `.sync()` / `cg::sync(g)` call waits on: "block" for a thread block,
        "warp" for a tile or coalesced group (at most a warp), None when its type is unknown."""
        if full.endswith(".sync") or full.endswith("->sync"):
            group = full.rsplit(".", 1)[0].rsplit("->", 1)[0]
        elif arg_nodes:
            group = syntax.text(arg_nodes[0])
        else:
            return None
        group = group.strip()
        text = group if "(" in group else self.scope.types.get(group, "")
        if text in ("", "auto") and group in self.defs:   # `auto block = cg::this_thread_block();`
            text = syntax.text(self.defs[group])
        text = text or self._groups.get(group, "")
        if "tile" in text or "coalesced" in text or "warp" in text:
            return "warp"
        if "thread_block" in text:
            return "block"
        return None

    def _follow(self, name: str, loop_depth: int, seen: set[str], args: list | None = None) -> None:
        """Walk the body of a helper the kernel calls, as part of the kernel (depth-bounded). The helper sees
        its own parameters only: one that receives a kernel pointer (`A + k * lda`, `&A[row * K]`) is that
        pointer at that offset, one that receives a shared array is that array, an integer one carries how
        its argument varies across the lanes; a tile loader's global loads are then the kernel's."""
        if name not in self.functions or name in seen or len(seen) > MAX_CALL_DEPTH:
            return
        callee = self.functions[name]
        aliases: dict[str, tuple[str, IndexInfo]] = {}
        shared = {k: v for k, v in self.scope.shared.items()}
        values: dict[str, IndexInfo] = {}
        data_vars: dict[str, bool] = {}
        for param, arg in zip(parameters(callee), args or [], strict=False):
            if not param.name:
                continue
            shared.pop(param.name, None)        # the parameter hides a kernel array of the same name
            argument = unwrap(arg)
            if param.pointer:
                array = self._shared_argument(argument)
                if array is not None:
                    shared[param.name] = array
                    continue
                alias = self._pointer_alias(argument)
                if alias is not None:
                    aliases[param.name] = alias
            else:
                values[param.name] = self.scope.info(arg)
                loaded = self._data_dependence(arg)
                if loaded is not None:
                    data_vars[param.name] = loaded   # a row extent passed in is still a loaded bound
        saved = (self.scope.pointer_params, self.scope.aliases, self.scope.vars, self.scope.shared, self._data_vars)
        self.scope.pointer_params, self.scope.aliases, self.scope.vars, self.scope.shared, self._data_vars = (
            set(), aliases, values, shared, data_vars)
        try:
            self.visit(callee.child_by_field_name("body"), loop_depth, seen | {name}, in_callee=True)
        finally:
            (self.scope.pointer_params, self.scope.aliases, self.scope.vars, self.scope.shared,
             self._data_vars) = saved

    def _shared_argument(self, node) -> dict[str, Any] | None:
        """The shared array an argument points into (`s`, `&s[i][0]`, `s + off`), or None."""
        while node is not None:
            if node.type == "identifier":
                return self.scope.shared.get(syntax.text(node))
            if node.type == "pointer_expression" and syntax.text(node.child_by_field_name("operator")) == "&":
                node = unwrap(node.child_by_field_name("argument"))
            elif node.type == "subscript_expression":
                node = unwrap(node.child_by_field_name("argument"))
            elif node.type == "binary_expression" and syntax.text(node.child_by_field_name("operator")) in "+-":
                node = unwrap(node.child_by_field_name("left"))
            else:
                return None
        return None

    def _hinted_access(self, address, is_store: bool) -> None:
        """`__ldg(&p[i])`, `__stcs(p + i, v)`: classify the address like a subscript."""
        address = unwrap(address)
        alias = self._pointer_alias(address)
        if alias is None:
            return
        vec = vector_type_in(next((p["type"] for p in self.params if p["name"] == alias[0]), ""))
        inner = unwrap(address.child_by_field_name("argument")) if address is not None \
            and address.type == "pointer_expression" else None
        index = subscript_index(inner) if inner is not None and inner.type == "subscript_expression" else None
        self._count_access(alias[1], TYPE_BYTES[vec] if vec else 0, is_store, not is_store, param=alias[0],
                           index=index)

    def _atomic(self, target, loop_depth: int) -> None:
        self.atomics["total"] += 1
        if loop_depth:
            self.atomics["in_loops"] += 1
        node = unwrap(target)
        if node is not None and node.type == "pointer_expression":
            node = unwrap(node.child_by_field_name("argument"))
        while node is not None and node.type in ("subscript_expression", "binary_expression"):
            node = unwrap(node.child_by_field_name("argument") if node.type == "subscript_expression"
                          else node.child_by_field_name("left"))
        name = syntax.text(node) if node is not None and node.type == "identifier" else None
        self.atomics["shared" if name in self.scope.shared else "global"] += 1
        alias = self._pointer_alias(node) if name is not None and name not in self.scope.shared else None
        if alias is not None:
            self._written_params.add(alias[0])   # an atomic's target is written: no read-only input
        if name not in self.scope.shared and target is not None and self._data_dependent(target):
            self.g["data_indexed_atomics"] += 1   # histogram-like: the address comes from loaded data

    def _data_dependent(self, node, depth: int = 0) -> bool:
        """Does the address expression `node` depend on a value loaded from global memory (directly
        or through up to two levels of local variables)? `&bins[data[i] - 'a']` does; `&out[blockIdx.x]` does not."""
        node = unwrap(node)
        if node is None:
            return False
        if node.type == "pointer_expression":
            node = unwrap(node.child_by_field_name("argument"))
        index = subscript_index(node) if node is not None and node.type == "subscript_expression" else node
        if index is None:
            return False
        if self._reads_global(index):
            return True
        if depth < 2:
            for child in syntax.walk(index):
                if child.type == "identifier" and syntax.text(child) in self.defs:
                    if self._data_dependent(self.defs[syntax.text(child)], depth + 1):
                        return True
        return False

    def _asm(self, text: str) -> None:
        # inline PTX is a string: the one place text matching is the right tool
        lowered = text.lower()
        if "wgmma.mma_async" in lowered or re.search(r"\bmma\.sync", lowered):
            self._issues.append(("mma", self._depth))
        if "wgmma" in lowered:
            self.tensor["wgmma"] = True
        elif re.search(r"\bmma\.sync", lowered):
            self.tensor["mma_sync"] = True
        if "cp.async.bulk" in lowered:
            self.async_copy["tma"] = True
        elif "cp.async" in lowered:
            self.async_copy["cp_async"] = True
        if re.search(r"cp\.async\.(bulk\.tensor|ca|cg)", lowered):
            self._issues.append(("copy", self._depth))
        if "setmaxnreg" in lowered:
            self.pipeline["setmaxnreg"] = True

    # -- control flow and arithmetic --

    def _arms(self, node, loop_depth: int, seen: set[str], in_callee: bool) -> None:
        """Visit an if statement's parts; an arm taken by some threads only that loops over async
        copies and issues no MMA, in a kernel whose MMAs run elsewhere, is a producer branch (warp
        specialization: `if (warpgroup == 0) { for (k...) tma_load(...); } else { ... wgmma ... }`).
        A copy issued by `if (tid == 0)` inside the consumers' own k-loop is not: that loop is outside the arm."""
        consequence = node.child_by_field_name("consequence")
        condition = node.child_by_field_name("condition")
        for child in node.children:
            if consequence is None or child.id != consequence.id:
                self.visit(child, loop_depth, seen, in_callee)
                continue
            start = len(self._issues)
            self.visit(child, loop_depth, seen, in_callee)
            arm = self._issues[start:]
            if (condition is not None and self._thread_dependent(condition)
                    and any(what == "copy" and depth > loop_depth for what, depth in arm)
                    and not any(what == "mma" for what, _ in arm)):
                self._producer_arms.append(len(self._issues))

    def finish_pipeline(self) -> None:
        """After the walk: a producer arm counts once the kernel issues MMAs outside it."""
        self.pipeline["producer_branch"] = bool(self._producer_arms) and any(what == "mma" for what, _ in self._issues)

    def _branch(self, node, loop_depth: int) -> None:
        condition = node.child_by_field_name("condition")
        if condition is None:
            return
        if self.scope.info(condition).tx != NONE and not self._range_guard(condition):
            self.branches["thread_dependent"] += 1
            if loop_depth:
                self.branches["in_loops"] += 1
            if self._modulo_of_thread(condition):
                self.reduction["modulo_branches"] += 1

    def _modulo_of_thread(self, condition) -> bool:
        """`tid % (2 * s) == 0`, `(tid & (m - 1)) == 0`: the active lanes of a warp are every k-th one
        (k < 32 or a run-time value), so every warp stays partly active instead of whole warps retiring."""
        for node in syntax.walk(condition):
            if node.type != "binary_expression":
                continue
            op = syntax.text(node.child_by_field_name("operator"))
            if op not in ("%", "&"):
                continue
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if self.scope.info(left).tx == NONE:
                continue
            value = self.scope.constants.eval(right)
            if value is None and right is not None and self._compile_time(right):
                continue
            if value is None or (op == "%" and 1 < value < 32) or (op == "&" and 0 < value < 31):
                return True
        return False

    def _range_guard(self, node) -> bool:
        """`i < n`, `x < cols && y < rows`, `r >= rows`: bounds checks that diverge only at the edge."""
        node = unwrap(node)
        if node is None:
            return False
        if node.type == "condition_clause":
            named = node.named_children
            return bool(named) and self._range_guard(named[-1])
        if node.type != "binary_expression":
            return False
        op = syntax.text(node.child_by_field_name("operator"))
        if op in ("&&", "||"):
            return (self._range_guard(node.child_by_field_name("left"))
                    and self._range_guard(node.child_by_field_name("right")))
        if op in ("<", "<=", ">", ">="):
            left = self.scope.info(node.child_by_field_name("left"))
            right = self.scope.info(node.child_by_field_name("right"))
            # an ordering test on plain indices (i < n, y < rows): lanes disagree in one warp at most
            return left.tx in (UNIT, NONE) and right.tx in (UNIT, NONE)
        return False

    def _division(self, node) -> None:
        op = syntax.text(node.child_by_field_name("operator"))
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

    def _bit_field(self, node) -> None:
        """`(x >> s) & MASK`, MASK known at compile time, s a run-time scalar that is neither a loop counter nor
        thread-dependent (a parameter): a field whose position is chosen per launch, as a radix sort's digit of
        the pass. A shift by a loop counter or a lane (unpacking, bit tests) is not counted."""
        if syntax.text(node.child_by_field_name("operator")) != "&":
            return
        left, right = unwrap(node.child_by_field_name("left")), unwrap(node.child_by_field_name("right"))
        for shifted, mask in ((left, right), (right, left)):
            if (shifted is None or shifted.type != "binary_expression"
                    or syntax.text(shifted.child_by_field_name("operator")) != ">>"):
                continue
            if self.scope.constants.eval(mask) is None and not self._compile_time(mask):
                continue
            amount = unwrap(shifted.child_by_field_name("right"))
            if (amount is not None and amount.type == "identifier" and not self._compile_time(amount)
                    and not self._mentions_loop_var(amount) and not self._thread_dependent(amount)):
                self.bits["runtime_shift_fields"] += 1
                return

    def _is_float(self, node) -> bool:
        while node is not None and node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[-1]
        if node is None:
            return False
        if node.type == "cast_expression":
            return syntax.text(node.child_by_field_name("type")).strip() in FLOAT_TYPES
        if node.type == "number_literal":
            text = syntax.text(node).lower()
            return not text.startswith("0x") and ("." in text or "e" in text or text.endswith("f"))
        if node.type == "identifier":
            return self.scope.types.get(syntax.text(node), "").rstrip("*") in FLOAT_TYPES and not self.scope.types.get(
                syntax.text(node), "").endswith("*")
        if node.type == "call_expression":
            name = syntax.text(node.child_by_field_name("function")).split("::")[-1]
            return name in PRECISE_FLOAT_MATH | DOUBLE_MATH | FAST_INTRINSICS or name in (
                "fabsf", "fmaxf", "fminf", "sqrtf", "rsqrtf")
        if node.type == "binary_expression":
            return self._is_float(node.child_by_field_name("left")) or self._is_float(node.child_by_field_name("right"))
        if node.type == "subscript_expression":
            base = unwrap(node.child_by_field_name("argument"))
            while base is not None and base.type == "subscript_expression":
                base = unwrap(base.child_by_field_name("argument"))
            if base is not None and base.type == "identifier":
                name = syntax.text(base)
                if name in self.scope.shared:
                    return self.scope.shared[name]["type"] in FLOAT_TYPES
                if name in self.local:
                    return self.local[name]["type"] in FLOAT_TYPES
                ptype = next((p["type"] for p in self.params if p["name"] == name), self.scope.types.get(name, ""))
                return any(t in FLOAT_TYPES for t in re.findall(r"\w+", ptype))
        if node.type == "field_expression":
            return False
        return False


def resolve_aliases(type_text: str | None, typedefs: dict[str, str], depth: int = 4) -> str | None:
    """TYPE_TEXT with every alias of TYPEDEFS replaced by what it names, a few levels deep (`const T*` -> `const
    __nv_bfloat16*`)."""
    for _ in range(depth):
        if not type_text or not typedefs:
            return type_text
        replaced = re.sub(r"\b\w+\b", lambda m: typedefs.get(m.group(0), m.group(0)), type_text)
        if replaced == type_text:
            break
        type_text = replaced
    return type_text


def _either(a: bool | None, b: bool | None) -> bool | None:
    """Combine two data dependences (None: no load; True: at a thread's index)."""
    return a if b is None else (b if a is None else a or b)


def parent_is_address_of(node) -> bool:
    parent = node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    return (parent is not None and parent.type == "pointer_expression"
            and syntax.text(parent.child_by_field_name("operator")) == "&")



def loop_counter(node) -> str | None:
    """The variable a `for` loop's update advances (`i += s`, `i = i + s`, `++i`), None when there is none."""
    update = unwrap(node.child_by_field_name("update"))
    if update is None:
        return None
    if update.type == "assignment_expression":
        target = update.child_by_field_name("left")
    elif update.type == "update_expression":
        target = update.child_by_field_name("argument")
    else:
        return None
    return syntax.text(target).strip() if target is not None and target.type == "identifier" else None


def continues_previous_loop(node) -> bool:
    """`for (; i < n; i += s)` right after a `for` that advances the same `i`: the remainder loop of an unrolled
    loop, which resumes where the other stopped (`for (; i + 3 * s < n; i += 4 * s) {...} for (; i < n; i += s)`).
    It starts from no initialiser, so nothing between the two loops may reset `i` (comments and pragmas aside)."""
    if node.type != "for_statement" or node.child_by_field_name("initializer") is not None:
        return False
    counter = loop_counter(node)
    previous = node.prev_named_sibling
    while previous is not None and (previous.type == "comment" or previous.type.startswith("preproc")):
        previous = previous.prev_named_sibling
    return (counter is not None and previous is not None and previous.type == "for_statement"
            and loop_counter(previous) == counter)

