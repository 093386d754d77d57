"""The one tree-sitter-cuda reader: parser, tree walks and the small questions every reader asks.

The launcher signatures (`skillbase.cuda.launchers`), the task spec, `skillbase init`, the
harness's static check and the evidence's static features all read CUDA through here, so a source
is parsed one way everywhere. tree-sitter-cuda is a hard dependency; nothing here falls back to
text matching (only `strip_comments_and_strings` works on text: for macro bodies and unparsed
regions, which tree-sitter keeps as text).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

import tree_sitter
import tree_sitter_cuda

__all__ = ["parser", "parse", "text", "line", "walk", "descendants", "function_declarator", "function_name",
           "declarator_name", "is_kernel", "in_extern_c", "inside", "strip_comments_and_strings"]


@functools.cache
def parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


def parse(source: bytes | str) -> tree_sitter.Tree:
    return parser().parse(source.encode() if isinstance(source, str) else source)


def text(node) -> str:
    """The source text of `node` (invalid UTF-8 replaced)."""
    return node.text.decode("utf-8", errors="replace")


def line(node) -> int:
    """The 1-based line `node` starts on."""
    return node.start_point[0] + 1


def walk(node) -> Iterator:
    """`node` and everything under it, in source order (depth first)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def descendants(node) -> Iterator:
    """Everything under `node`, in source order (`node` itself excluded)."""
    nodes = walk(node)
    next(nodes)
    yield from nodes


def function_declarator(declarator):
    """The `function_declarator` inside a definition's declarator (through pointer declarators), or None."""
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    return declarator


def function_name(declarator) -> str | None:
    """The name a function definition's declarator declares, as written (`f`, `ns::f`, `Cls::f`)."""
    found = function_declarator(declarator)
    name = found.child_by_field_name("declarator") if found is not None else None
    return text(name) if name is not None else None


def declarator_name(node) -> str | None:
    """The bare identifier a declarator declares, through pointers, arrays, references, initialisers,
    qualified names and templates (`ns::f` -> `f`, `*p = x` -> `p`, `s[4][4]` -> `s`)."""
    while node is not None:
        if node.type in ("identifier", "field_identifier"):
            return text(node)
        if node.type in ("qualified_identifier", "template_function"):
            return text(node.child_by_field_name("name"))
        inner = node.child_by_field_name("declarator")
        if inner is None:
            named = [c for c in node.named_children if c.type not in ("type_qualifier", "ms_pointer_modifier")]
            inner = named[0] if named else None
        node = inner
    return None


def is_kernel(function) -> bool:
    """Is this function definition a `__global__` kernel?"""
    return any(child.type == "__global__" for child in function.children)


def in_extern_c(node) -> bool:
    """Does `node` sit inside an `extern "C"` specification (`extern "C" f(...)` or `extern "C" { ... }`)?"""
    parent = node.parent
    while parent is not None:
        if parent.type == "linkage_specification" and any(
                child.type == "string_literal" and text(child).strip('"') == "C" for child in parent.children):
            return True
        parent = parent.parent
    return False


def inside(node, kinds: set[str]) -> bool:
    """Is `node` nested in a node of one of `kinds` within its own function (e.g. inside a loop)?"""
    parent = node.parent
    while parent is not None:
        if parent.type in kinds:
            return True
        if parent.type == "function_definition":
            return False
        parent = parent.parent
    return False


def strip_comments_and_strings(source_text: str) -> str:
    """Text with comments removed and string literals emptied (for words scanned outside the tree)."""
    source_text = re.sub(r"/\*.*?\*/", " ", source_text, flags=re.S)
    source_text = re.sub(r"//[^\n]*", " ", source_text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', source_text)
