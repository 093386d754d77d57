"""Static source features of a `.cu` file, read with tree-sitter-cuda (docs/architecture.md §1b).

The entry point `static_features` and the file-level analysis (constants, launchers and their
launch configurations, parse errors); each kernel is analysed by `kernel.py`.

What an expert looks for before profiling: shared-memory tiles and their padding, vector widths,
`__ldg` / cache hints, `const __restrict__`, atomics (shared vs global), barriers in loops, warp
intrinsics, loop nests and unrolling, launch bounds, tensor-core and async-copy use, local arrays
indexed at run time, double precision, precise vs fast math, and how global accesses are indexed
by `threadIdx.x` (coalesced / strided / broadcast). Host launchers (`extern "C"`) with their
`<<<grid, block, smem, stream>>>` are listed with constant-folded sizes; a launch through the
runtime (`cudaLaunchKernelEx(&config, kernel, ...)`, `LAUNCH_CALLS`) counts as one, its sizes read
from the config's `gridDim` / `blockDim` assignments.

The analysis is syntactic: no macro expansion (object-like `#define` constants are folded), no
types beyond declarations in the file. `__device__` functions a kernel calls are analysed as part
of the kernel (with loop context), their parameters bound to the call's arguments: a pointer into a
kernel parameter or a shared array is that memory, an integer carries how its argument varies across
the lanes, so a tile loader's global loads and shared stores are the kernel's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillbase.cuda import syntax
from skillbase.cuda.launchers import is_launcher, parameters
from skillbase.cuda.names import base_name, without_params
from skillbase.errors import InputError
from skillbase.evidence.static.constants import Constants
from skillbase.evidence.static.cuda_names import HOST_TIMERS, LAUNCH_CALLS, LIBRARY_CALL, LIBRARY_NAMESPACES, LOOPS
from skillbase.evidence.static.indexing import unwrap
from skillbase.evidence.static.kernel import callee_name, kernel_features, template_params

__all__ = ["static_features"]

MAX_HEADERS = 16                 # project headers read per source (a translation unit's own, not a library's tree)
MAX_HEADER_BYTES = 1 << 20       # of each


class _FileAnalysis:
    """One source file: its constants, functions, kernels and launchers, then the features of each."""

    def __init__(self, source: bytes, path: str, folder: Path | None = None, include_dirs: Sequence[Path] = (),
                 instances: Sequence[str] = ()):
        self.source = source
        self.instances = list(instances)         # demangled names of profiled kernels (template instances)
        self.path = path
        self.tree = syntax.parse(source)
        self.root = self.tree.root_node
        self.constants = Constants()
        self.functions: dict[str, Any] = {}      # __device__ / host helpers by name
        self.typedefs: dict[str, str] = {}       # file-scope `typedef X T;` / `using T = X;`: T -> X
        self.kernels: list[tuple[str, Any]] = []
        self.header_kernels: list[tuple[str, Any, str]] = []   # (name, node, the header's file name)
        self.launchers: list[tuple[str, Any]] = []
        self.folder = folder                     # the source's own folder: where nvcc looks first for "x.cuh"
        self.include_dirs = [Path(d) for d in include_dirs]
        self.headers: list[str] = []             # the project headers read, in the order they were found
        self._header_trees: list[Any] = []       # kept alive: their function nodes are used after parsing

    def run(self) -> dict[str, Any]:
        self._collect()
        self._collect_headers()
        origin = self._adopt_header_kernels()
        parse_errors = self._parse_errors()
        if not self.kernels:
            if parse_errors:
                raise InputError(f"{self.path}:{parse_errors[0]}: cannot parse the CUDA source near here "
                                 "(no __global__ kernel found)", hint="check that the file compiles with nvcc")
            raise InputError(f"{self.path}: no __global__ kernel found in the source",
                             hint="give the .cu file that defines the kernel")
        kernels = {}
        launch_nodes = [n for n in syntax.walk(self.root) if _launch_site(n)]
        for name, node in self.kernels:
            key = name if name not in kernels else f"{name}@{syntax.line(node)}"
            kernels[key] = kernel_features(node, self.constants, self.functions, self._functor_params(node),
                                           typedefs=self.typedefs)
            kernels[key]["host"] = self._host(name, launch_nodes)
            if name in origin:
                kernels[key]["defined_in"] = origin[name]     # its `line` is the header's
            for instance, bound in self._function_arguments(name, node):
                # what this instantiation runs: its function-pointer arguments' helpers, loops and all
                kernels[instance] = kernel_features(node, self.constants, self.functions, bound,
                                                    typedefs=self.typedefs)
                kernels[instance]["host"] = kernels[key]["host"]
        launchers = {name: self._launcher(node) for name, node in self.launchers}
        return {
            "file": {
                "path": self.path,
                "parse_errors": parse_errors,
                "includes": [syntax.text(n.child_by_field_name("path")).strip('<>"')
                             for n in syntax.walk(self.root) if n.type == "preproc_include"],
                "library_calls": sorted({syntax.text(n) for n in syntax.walk(self.root)
                                         if (n.type == "identifier" and LIBRARY_CALL.match(syntax.text(n)))
                                         or (n.type == "namespace_identifier"
                                             and syntax.text(n) in LIBRARY_NAMESPACES)}),
                "headers": self.headers,
                "kernel_launches": len(launch_nodes),
                "launches_in_host_loops": sum(1 for n in launch_nodes if syntax.inside(n, LOOPS)),
            },
            "kernels": kernels,
            "launchers": launchers,
        }

    def _function_arguments(self, name: str, node) -> list[tuple[str, dict[str, str]]]:
        """For kernel template NAME, each profiled instance (`void k<&helper>(float *)`) whose template
        arguments name functions of this file: (`k<&helper>`, {template parameter: function}). A kernel
        templated on a function pointer calls it through the parameter's name, which names no function:
        only the instance says which helper runs."""
        params = template_params(node)
        found = []
        for instance in self.instances:
            if not params or base_name(instance) != name:
                continue
            head = without_params(instance)
            arguments = _template_arguments(head)
            bound = self._functor_params(node)
            for param, argument in zip(params, arguments, strict=False):
                function = callee_name(argument.lstrip("&(").rstrip(")").strip())
                if param and function in self.functions:
                    bound[param] = function
                elif param and f"{function}::operator()" in self.functions:
                    # a functor type: the kernel's parameters of that type are called through its operator()
                    for kernel_param in parameters(node):
                        if kernel_param.name and kernel_param.base.split("::")[-1] == param:
                            bound[kernel_param.name] = f"{function}::operator()"
            if bound:
                found.append((head, bound))
        return found

    def _functor_params(self, node) -> dict[str, str]:
        """Kernel parameters whose declared type is a functor of this file (`Gelu op`): `op(x)` runs its
        operator()."""
        return {p.name: f"{p.base.split('::')[-1]}::operator()" for p in parameters(node)
                if p.name and not p.pointer and f"{p.base.split('::')[-1]}::operator()" in self.functions}

    # -- collection --

    def _collect(self) -> None:
        self._collect_from(self.root, header=False)

    def _collect_from(self, root, header: bool, origin: str = "") -> None:
        """Constants, helpers, kernels and launchers of one parsed file; a header (`origin`, its file name)
        adds helpers and constants, and its kernels aside (`_adopt_header_kernels`); its launchers are not
        this source's."""
        for node in syntax.walk(root):
            if node.type == "preproc_def":
                name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
                if name is not None and value is not None:
                    folded = self.constants.eval_text(syntax.text(value).strip())
                    if folded is not None and not (header and syntax.text(name) in self.constants.values):
                        self.constants.values[syntax.text(name)] = folded
            elif node.type in ("type_definition", "alias_declaration") and not syntax.inside(
                    node, {"function_definition"}):
                self._typedef(node, header)
            elif node.type == "declaration" and not syntax.inside(node, {"function_definition"}):
                if not header:
                    self.constants.add_declaration(node)
            elif node.type == "function_definition":
                name = syntax.declarator_name(node.child_by_field_name("declarator"))
                functor = _call_operator_of(node)
                if functor:     # `struct Op { __device__ float operator()(...) }`: what a kernel's `op(x)` runs
                    self.functions.setdefault(functor, node)
                if not name:
                    continue
                if header:
                    if syntax.is_kernel(node):
                        self.header_kernels.append((name, node, origin))
                    else:
                        self.functions.setdefault(name, node)
                elif syntax.is_kernel(node):
                    self.kernels.append((name, node))
                else:
                    self.functions.setdefault(name, node)
                    if is_launcher(node):
                        self.launchers.append((name, node))

    def _typedef(self, node, header: bool) -> None:
        """`typedef __nv_bfloat16 T;` or `using T = __nv_bfloat16;` at file scope: a kernel's `const T*` is then a
        bf16 pointer (the file's own alias wins over a header's)."""
        target = node.child_by_field_name("type")
        # `typedef struct { float x, y; } Body;` names a struct, not another type: resolving Body to the struct's
        # text would make `p[i].x` look like a field of the built-in `float` it contains
        if target is None or target.child_by_field_name("body") is not None:
            return
        names = ([node.child_by_field_name("name")] if node.type == "alias_declaration"
                 else node.children_by_field_name("declarator"))
        for name in names:
            if name is not None and name.type == "type_identifier":
                if not (header and syntax.text(name) in self.typedefs):
                    self.typedefs[syntax.text(name)] = syntax.text(target)

    def _collect_headers(self) -> None:
        """The helpers of the translation unit's own headers: a kernel often issues its mma.sync,
        cp.async or ldmatrix through `__device__` wrappers in a `"mma_ptx.cuh"` beside it, and
        what the profiled kernel runs includes what they do. Quoted includes only (system headers
        are the toolkit's), resolved as nvcc does: the including file's folder, then the include
        folders; breadth first, at most MAX_HEADERS files of MAX_HEADER_BYTES. The file's own
        definitions and constants win over a header's of the same name."""
        pending = [(self.root, self.folder)]
        visited: set[Path] = set()
        while pending and len(self.headers) < MAX_HEADERS:
            root, folder = pending.pop(0)
            for include in (n for n in syntax.walk(root) if n.type == "preproc_include"):
                target = include.child_by_field_name("path")
                if target is None or target.type != "string_literal":
                    continue
                found = self._resolve(syntax.text(target).strip('"'), folder)
                if found is None or found in visited or len(self.headers) >= MAX_HEADERS:
                    continue
                visited.add(found)
                try:
                    text = found.read_bytes()[:MAX_HEADER_BYTES]
                except OSError:
                    continue
                tree = syntax.parse(text)
                self._header_trees.append(tree)
                self.headers.append(found.name)
                self._collect_from(tree.root_node, header=True, origin=found.name)
                pending.append((tree.root_node, found.parent))

    def _adopt_header_kernels(self) -> dict[str, str]:
        """The `__global__` kernels of the project headers this source includes are its kernels too: nvcc compiles
        them into this translation unit, and a profile names them (the CUDA samples' `BlackScholes.cu` launches
        the kernel its `BlackScholes_kernel.cuh` defines). A kernel of the source's own wins over a header's of
        the same name. Returns {kernel: header} for those adopted."""
        taken = {name for name, _ in self.kernels}
        origin = {}
        for name, node, header in self.header_kernels:
            if name not in taken:
                taken.add(name)
                self.kernels.append((name, node))
                origin[name] = header
        return origin

    def _resolve(self, name: str, folder: Path | None) -> Path | None:
        for base in ([folder] if folder is not None else []) + self.include_dirs:
            candidate = (base / name).resolve()
            if candidate.is_file():
                return candidate
        return None

    def _parse_errors(self) -> list[str]:
        errors = []
        for node in syntax.walk(self.root):
            if node.type == "ERROR" or node.is_missing:
                snippet = " ".join(syntax.text(node).split())[:60]
                what = f"missing {node.type}" if node.is_missing else f"unparsed `{snippet}`"
                errors.append(f"{syntax.line(node)}: {what}")
        return errors[:50]

    # -- the host code that drives a kernel --

    def _host(self, kernel: str, launch_nodes: list) -> dict[str, Any]:
        """The host functions that launch `kernel` and what else they launch: the kernel's own
        host side. A benchmark (`main`, or a function that times its launches: cudaEventElapsedTime,
        std::chrono, ...) is not the kernel's host code: its timing loops, reference checks and other
        variants' calls count only when nothing else launches the kernel, and then its loops count
        as repetitions of the benchmark, not as the kernel's host loop."""
        by_function: dict[str, list] = {}
        benchmarks: set[str] = set()
        for node in launch_nodes:
            definition = _enclosing_definition(node)
            if definition is None:
                continue
            function = syntax.declarator_name(definition.child_by_field_name("declarator"))
            by_function.setdefault(function, []).append(node)
            if function == "main" or _times_itself(definition):
                benchmarks.add(function)
        drivers = sorted(f for f, nodes in by_function.items()
                         if f not in benchmarks and any(_launched_kernel(n) == kernel for n in nodes))
        timed = sorted(f for f in benchmarks if any(_launched_kernel(n) == kernel for n in by_function[f]))
        from_benchmark = not drivers and bool(timed)
        functions = drivers or timed
        sites = [n for f in functions for n in by_function[f]]
        own = [n for n in sites if _launched_kernel(n) == kernel]
        return {
            "launchers": functions,
            # launches in the busiest of those functions: a chain when the kernel is one of several
            "launches": max((len(by_function[f]) for f in functions), default=0),
            "kernels_launched": sorted({_launched_kernel(n) for n in sites}),
            "launches_in_loops": 0 if from_benchmark else sum(1 for n in own if syntax.inside(n, LOOPS)),
        }

    # -- launchers --

    def _launcher(self, node) -> dict[str, Any]:
        params = [{"name": p.name, "type": p.declared, "pointer": p.pointer, "const": p.const}
                  for p in parameters(node)]
        constants = self.constants.child()
        dims: dict[str, int | None] = {}
        body = node.child_by_field_name("body")
        launches = []
        configs: dict[str, dict[str, Any]] = {}     # cudaLaunchConfig_t name -> its _LAUNCH_FIELDS' values
        for child in syntax.walk(body):
            if child.type == "assignment_expression" and child.child_by_field_name("left").type == "field_expression":
                target = child.child_by_field_name("left")
                field = syntax.text(target.child_by_field_name("field"))
                if field in _LAUNCH_FIELDS:
                    owner = syntax.text(target.child_by_field_name("argument"))
                    configs.setdefault(owner, {})[field] = child.child_by_field_name("right")
            elif child.type == "call_expression" and _launch_site(child):
                config = _launch_config(child, configs)
                grid, block = config.get("gridDim"), config.get("blockDim")
                launches.append({
                    "kernel": _launched_kernel(child),
                    "line": syntax.line(child),
                    "grid": syntax.text(grid) if grid is not None else "",
                    "block": syntax.text(block) if block is not None else "",
                    "shared": syntax.text(config["dynamicSmemBytes"]) if "dynamicSmemBytes" in config else None,
                    "stream": syntax.text(config["stream"]) if "stream" in config else None,
                    "block_threads": self._size(block, constants, dims),
                    "grid_blocks": self._size(grid, constants, dims),
                    "in_loop": syntax.inside(child, LOOPS),
                })
            elif child.type == "declaration":
                constants.add_declaration(child)
                if syntax.text(child.child_by_field_name("type")) == "dim3":
                    for declarator in child.children_by_field_name("declarator"):
                        dims[syntax.declarator_name(declarator) or ""] = self._dim3(declarator, constants)
        return {"line": syntax.line(node), "params": params, "launches": launches}

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
        stripped = unwrap(node)
        if stripped is not None and stripped.type == "identifier" and syntax.text(stripped) in dims:
            return dims[syntax.text(stripped)]
        if stripped is not None and stripped.type == "call_expression" \
                and syntax.text(stripped.child_by_field_name("function")) == "dim3":
            values = [constants.eval(a) for a in stripped.child_by_field_name("arguments").named_children]
            return math.prod(values) if values and None not in values else None  # type: ignore[arg-type]
        return constants.eval(node)


def _enclosing_definition(node):
    parent = node.parent
    while parent is not None and parent.type != "function_definition":
        parent = parent.parent
    return parent


def _times_itself(definition) -> bool:
    """Does this host function read a clock (a benchmark's timing loop)?"""
    return any((n.type == "identifier" and syntax.text(n) in HOST_TIMERS)
               or (n.type == "namespace_identifier" and syntax.text(n) == "chrono")
               for n in syntax.walk(definition.child_by_field_name("body")))


def _chevron(call) -> bool:
    return any(c.type == "kernel_call_syntax" for c in call.children)


def _launch_site(node) -> bool:
    """A kernel launch: `kernel<<<...>>>(...)` or a runtime launch call (`LAUNCH_CALLS`)."""
    if node.type != "call_expression":
        return False
    if _chevron(node):
        return True
    arguments = node.child_by_field_name("arguments")
    index = LAUNCH_CALLS.get(_callee(node))
    return index is not None and arguments is not None and len(arguments.named_children) > index


def _callee(call) -> str:
    """The called function's bare name (`ns::f` -> `f`); "" for a call through an expression."""
    function = call.child_by_field_name("function")
    return syntax.text(function).split("::")[-1] if function is not None else ""


def _launched_kernel(call) -> str:
    """The name of the kernel a launch site starts (`ns::k<128>` -> `k`; `(const void*)&k` -> `k`)."""
    function = call.child_by_field_name("function")
    if function is not None and not _chevron(call):
        function = _through_casts(call.child_by_field_name("arguments").named_children[LAUNCH_CALLS[_callee(call)]])
    if function is not None and function.type == "template_function":
        function = function.child_by_field_name("name")
    return syntax.text(function).split("::")[-1] if function is not None else ""


def _through_casts(node):
    """The expression under casts, `&` and parentheses: `reinterpret_cast<const void*>(&k)` -> `k`."""
    while True:
        if node.type == "cast_expression":
            node = node.child_by_field_name("value")
        elif node.type == "pointer_expression":
            node = node.child_by_field_name("argument")
        elif node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[-1]
        elif node.type == "call_expression" and syntax.text(node.child_by_field_name("function")).startswith(
                ("reinterpret_cast", "static_cast")) and node.child_by_field_name("arguments").named_children:
            node = node.child_by_field_name("arguments").named_children[-1]
        else:
            return node


_LAUNCH_FIELDS = ("gridDim", "blockDim", "dynamicSmemBytes", "stream")   # a cudaLaunchConfig_t's, and <<<>>>'s order


def _launch_config(call, configs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A launch's grid, block, dynamic shared memory and stream expressions (those it gives), by
    `cudaLaunchConfig_t` field name: from `<<<...>>>`, from cudaLaunchKernel's arguments, or from the
    assignments to the config a cudaLaunchKernelEx reads (`configs`)."""
    if _chevron(call):
        chevron = next(c for c in call.children if c.type == "kernel_call_syntax").named_children
        return dict(zip(_LAUNCH_FIELDS, chevron, strict=False))
    if LAUNCH_CALLS[_callee(call)] == 0:      # cudaLaunchKernel(kernel, grid, block, args, smem, stream)
        given = dict(zip(("gridDim", "blockDim", "args", "dynamicSmemBytes", "stream"),
                         call.child_by_field_name("arguments").named_children[1:], strict=False))
        given.pop("args", None)
        return given
    return configs.get(_config_name(call), {})


def _config_name(call) -> str:
    """The `cudaLaunchConfig_t` a runtime launch reads: `config` in `cudaLaunchKernelEx(&config, ...)`."""
    return syntax.text(_through_casts(call.child_by_field_name("arguments").named_children[0]))


def _call_operator_of(function) -> str | None:
    """`S::operator()` for the call operator defined inside `struct S { ... }`, else None."""
    declarator = syntax.function_declarator(function.child_by_field_name("declarator"))
    if declarator is None or not any(c.type == "operator_name" and syntax.text(c).replace(" ", "") == "operator()"
                                     for c in declarator.children):
        return None
    owner = function.parent
    while owner is not None and owner.type not in ("struct_specifier", "class_specifier"):
        owner = owner.parent
    name = owner.child_by_field_name("name") if owner is not None else None
    return f"{syntax.text(name)}::operator()" if name is not None else None


def _template_arguments(head: str) -> list[str]:
    """`k<&f, 128>` -> ["&f", "128"]: the top-level template arguments of a name without parameters."""
    start = head.find("<")
    if start < 0 or not head.endswith(">"):
        return []
    arguments, depth, current = [], 0, []
    for char in head[start + 1:-1]:
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        if char == "," and depth == 0:
            arguments.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    return arguments + ["".join(current).strip()]


def static_features(path_or_text: str | Path, name: str | None = None,
                    include_dirs: Sequence[str | Path] = (), instances: Sequence[str] = ()) -> dict[str, Any]:
    """Features of a `.cu` file (a path, or source text when it contains a newline).

    INSTANCES: the demangled names of the profiled kernels (`void k<&helper>(float *)`); a kernel templated
    on a function pointer gets a second entry per instance, `kernels["k<&helper>"]`, with the call through
    its parameter followed into the helper that instance runs (the generic `kernels["k"]` cannot know it).

    The `__device__` helpers of the project headers it includes with quotes (found beside the file
    or in INCLUDE_DIRS, as nvcc's `-I`) count as part of the kernels that call them, and their `__global__`
    kernels are the file's kernels too (each marked `defined_in` with the header's name; a kernel the file
    defines itself wins over a header's of the same name); `file.headers` names the headers read. Raises
    InputError (one line) when the file is unreadable or holds no parseable kernel.
    """
    folder = None
    if isinstance(path_or_text, Path) or ("\n" not in str(path_or_text) and Path(str(path_or_text)).suffix):
        path = Path(path_or_text)
        try:
            source = path.read_bytes()
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except OSError as error:
            raise InputError(f"{path}: cannot read ({error.strerror})") from None
        label = name or str(path)
        folder = path.parent
    else:
        source = str(path_or_text).encode()
        label = name or "<source>"
    if b"\x00" in source[:4096]:
        raise InputError(f"{label}: binary data, not CUDA source")
    return _FileAnalysis(source, label, folder, [Path(d) for d in include_dirs], instances).run()
