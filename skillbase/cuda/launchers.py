"""Read a `.cu` file's extern "C" launchers with tree-sitter-cuda.

The task spec is checked against the launcher's signature (count, order, pointer vs scalar,
constness, element type). The evidence package's `static_features` is the project's main parser
and is used when it is importable; the small reader here covers the same `launchers.<name>.params`
contract so that loading a task never depends on the evidence package being present.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from skillbase.errors import EnvironmentProblem

__all__ = ["Param", "Launcher", "parser", "parse", "launchers", "node_text"]


@dataclass(frozen=True)
class Param:
    name: str
    type: str          # element type as written, qualifiers and `*` removed: "float", "unsigned int"
    pointer: bool
    const: bool        # for a pointer: is the pointee const (so the launcher cannot write through it)


@dataclass(frozen=True)
class Launcher:
    name: str
    line: int
    params: tuple[Param, ...]


@functools.cache
def parser():
    try:
        import tree_sitter_cuda
        from tree_sitter import Language, Parser
    except ImportError as error:  # pragma: no cover - both are hard dependencies
        raise EnvironmentProblem(f"cannot import tree-sitter-cuda ({error})",
                                 hint="pip install tree-sitter tree-sitter-cuda") from None
    return Parser(Language(tree_sitter_cuda.language()))


def parse(source: bytes):
    return parser().parse(source)


def node_text(node, source: bytes) -> str:
    return source[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _is_c_linkage(node, source: bytes) -> bool:
    for child in node.children:
        if child.type == "string_literal":
            return node_text(child, source).strip('"') == "C"
    return False


def function_name(declarator, source: bytes) -> str | None:
    """The name a function definition's declarator declares (through pointer declarators)."""
    # function_definition -> (pointer_declarator ->)* function_declarator -> identifier
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None:
        return None
    name = declarator.child_by_field_name("declarator")
    return node_text(name, source) if name is not None else None


def _param(node, source: bytes) -> Param | None:
    if node.type != "parameter_declaration":
        return None
    type_node = node.child_by_field_name("type")
    type_text = node_text(type_node, source) if type_node is not None else ""
    pointee_const = any(c.type == "type_qualifier" and node_text(c, source) == "const" for c in node.children)
    declarator = node.child_by_field_name("declarator")
    pointer = False
    name = ""
    while declarator is not None:
        if declarator.type in ("pointer_declarator", "abstract_pointer_declarator", "array_declarator"):
            pointer = True
        elif declarator.type == "identifier":
            name = node_text(declarator, source)
            break
        inner = declarator.child_by_field_name("declarator")
        if inner is None:
            break
        declarator = inner
    if type_text == "void" and not pointer:
        return None  # f(void)
    return Param(name=name, type=type_text, pointer=pointer, const=pointee_const)


def _is_kernel(function_node) -> bool:
    return any(c.type in ("__global__", "__device__") for c in function_node.children)


def launchers_from_source(source: bytes) -> dict[str, Launcher]:
    """Every extern "C" function *defined* in the file (kernels with C linkage excluded)."""
    tree = parse(source)
    found: dict[str, Launcher] = {}

    def visit_definition(fn) -> None:
        if _is_kernel(fn):
            return
        declarator = fn.child_by_field_name("declarator")
        name = function_name(declarator, source)
        if not name:
            return
        fdecl = declarator
        while fdecl is not None and fdecl.type != "function_declarator":
            fdecl = fdecl.child_by_field_name("declarator")
        plist = fdecl.child_by_field_name("parameters")
        params = tuple(p for p in (_param(c, source) for c in plist.children) if p is not None)
        found[name] = Launcher(name, fn.start_point[0] + 1, params)

    def walk(node) -> None:
        for child in node.children:
            if child.type == "linkage_specification" and _is_c_linkage(child, source):
                body = child.child_by_field_name("body")
                if body is None:
                    continue
                if body.type == "function_definition":
                    visit_definition(body)
                else:  # extern "C" { ... }
                    for item in body.children:
                        if item.type == "function_definition":
                            visit_definition(item)
            elif child.type in ("namespace_definition", "declaration_list", "preproc_ifdef", "preproc_if",
                                "preproc_else", "preproc_elif"):
                walk(child)

    walk(tree.root_node)
    return found


def launchers(path: Path) -> dict[str, Launcher]:
    """Launchers of the file at `path`, via the evidence package when it is there."""
    path = Path(path)
    try:
        from skillbase.evidence.static.features import static_features
    except ImportError:
        static_features = None
    if static_features is not None:
        try:
            data = static_features(path).get("launchers") or {}
            return {name: Launcher(name, int(info.get("line") or 0),
                                   tuple(Param(p.get("name") or "", _strip_type(p.get("type") or ""),
                                               bool(p.get("pointer")), bool(p.get("const")))
                                         for p in info.get("params") or ()))
                    for name, info in data.items()}
        except Exception:  # noqa: BLE001 - a parser bug there must not block task loading
            pass
    return launchers_from_source(path.read_bytes())


def _strip_type(text: str) -> str:
    from skillbase.task.dtypes import normalize_c_type

    return normalize_c_type(text)
