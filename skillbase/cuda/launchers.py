"""A `.cu` file's extern "C" launchers and their parameters, as written in the source.

The task spec is checked against the launcher's signature (count, order, pointer vs scalar,
constness, element type), `skillbase init` drafts a spec from it, and the evidence's static
features list every launcher with its launches. All three read parameters through `parameters`,
and decide what a launcher is through `is_launcher`: a function defined inside `extern "C"` that is
not a `__global__` kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from skillbase.cuda import syntax

__all__ = ["Param", "Launcher", "Parameter", "parameters", "is_launcher", "launchers", "launchers_from_source",
           "normalize_c_type"]


@dataclass(frozen=True)
class Parameter:
    """One parameter of a function definition, as the source writes it."""

    name: str | None    # None for an unnamed parameter
    declared: str       # the type as written before the name: "const float* __restrict__"
    base: str           # the type specifier alone: "float"
    pointer: bool       # a pointer or an array parameter
    const: bool         # for a pointer: is the pointee const; for a scalar: is it const
    restrict: bool      # __restrict__ (or restrict) is written

    @property
    def is_void(self) -> bool:
        """`f(void)`: the C spelling of "no parameters", not a parameter."""
        return self.name is None and not self.pointer and self.declared == "void"


@dataclass(frozen=True)
class Param:
    """A launcher parameter as the task spec sees it."""

    name: str
    type: str          # element type as written, qualifiers and `*` removed: "float", "unsigned int"
    pointer: bool
    const: bool        # for a pointer: is the pointee const (so the launcher cannot write through it)


@dataclass(frozen=True)
class Launcher:
    name: str
    line: int
    params: tuple[Param, ...]


def normalize_c_type(text: str) -> str:
    """`const float * __restrict__` -> `float`; `std::int32_t` -> `int32_t`."""
    words = text.replace("*", " ").replace("&", " ").split()
    drop = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct"}
    words = [w for w in words if w not in drop]
    out = " ".join(words)
    for prefix in ("std::", "::", "cuda::std::"):
        if out.startswith(prefix):
            out = out[len(prefix):]
    return out


def parameters(function) -> list[Parameter]:
    """The parameters of a function definition node, in order (`f(void)` gives one `is_void` entry)."""
    declarator = syntax.function_declarator(function.child_by_field_name("declarator"))
    if declarator is None:
        return []
    found = []
    for node in declarator.child_by_field_name("parameters").named_children:
        if node.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        written = " ".join(syntax.text(node).split())
        name_node = node.child_by_field_name("declarator")
        name = syntax.declarator_name(name_node) if name_node is not None else None
        declared = written[: written.rfind(name)].strip() if name and name in written else written
        pointer = "*" in declared or "[" in written
        type_node = node.child_by_field_name("type")
        # const applies to the pointee when it precedes the '*' (const float* / float const*)
        const = "const" in declared.split("*")[0] if pointer else "const" in declared.split()
        base = syntax.text(type_node) if type_node is not None else ""
        found.append(Parameter(name=name, declared=declared, base=base, pointer=pointer, const=const,
                               restrict="__restrict__" in written or "restrict" in declared.split()))
    return found


def is_launcher(function) -> bool:
    """A function definition the harness can call by its C name: inside extern "C", not a kernel."""
    return not syntax.is_kernel(function) and syntax.in_extern_c(function)


def launchers_from_source(source: bytes | str) -> dict[str, Launcher]:
    """Every extern "C" function *defined* in the source, by name (a later definition wins)."""
    found: dict[str, Launcher] = {}
    for node in syntax.walk(syntax.parse(source).root_node):
        if node.type != "function_definition" or not is_launcher(node):
            continue
        name = syntax.declarator_name(node.child_by_field_name("declarator"))
        if not name:
            continue
        params = tuple(Param(p.name or "", normalize_c_type(p.declared), p.pointer, p.const)
                       for p in parameters(node) if not p.is_void)
        found[name] = Launcher(name, syntax.line(node), params)
    return found


def launchers(path: str | Path) -> dict[str, Launcher]:
    """The launchers of the `.cu` file at `path`."""
    return launchers_from_source(Path(path).read_bytes())
