"""The one tree-sitter-cuda reader: parser, tree walks and the small questions every reader asks.

The launcher signatures (`skillbase.cuda.launchers`), the task spec, `skillbase init`, the
harness's static check and the evidence's static features all read CUDA through here, so a source
is parsed one way everywhere. tree-sitter-cuda is a hard dependency; nothing here falls back to
text matching (only `strip_comments_and_strings` works on text: for macro bodies and unparsed
regions, which tree-sitter keeps as text).

The grammar cannot read a few common CUDA constructs: `__align__(16)`, `__cluster_dims__(2,1,1)` and
`__maxnreg__(64)` in declarations, and `#pragma unroll` as the body of an unbraced loop (`for (...)` / `#pragma unroll`
/ `for (...) s;`). `parse` leaves exactly those out of the parse (tree-sitter's included ranges), so
the tree around them is whole while every node keeps its own byte offsets, lines and text. It leaves
out only a construct whose argument is a constant expression (no call but `sizeof`/`alignof`): one
that calls anything stays in, unparsed, where the static check scans its words.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

import tree_sitter
import tree_sitter_cuda

__all__ = ["parser", "parse", "hidden_ranges", "hidden_pragmas", "text", "line", "walk", "descendants",
           "function_declarator", "function_name", "declarator_name", "is_kernel", "in_extern_c", "inside",
           "strip_comments_and_strings"]


@functools.cache
def parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


# an argument of constants: numbers, names (macros, template parameters), operators, one level of
# parentheses; a call other than sizeof/alignof keeps the construct in the parse
_ARGUMENT = r"\((?:[^()]|\([^()]*\))*\)"
_CALL = re.compile(rb"\b(?!sizeof\b|alignof\b|__alignof__\b)\w+\s*\(")
_ATTRIBUTE = re.compile(rb"\b(?:__align__|__cluster_dims__|__maxnreg__)\s*" + _ARGUMENT.encode())
_LOOP_PRAGMA = re.compile(rb"#[ \t]*pragma[ \t]+(no)?unroll\b[^\n]*")
_MAX_PASSES = 4                 # each pass uncovers the pragmas of one more level of an unbraced loop nest


def parse(source: bytes | str) -> tree_sitter.Tree:
    """The tree of `source`, with the constructs the grammar cannot read left out (`hidden_ranges`)."""
    return _parse_whole(source.encode() if isinstance(source, str) else source)[0]


def hidden_ranges(source: bytes) -> list[tuple[int, int]]:
    """The byte ranges `parse` leaves out of the tree: the constant-argument `__align__(...)`,
    `__cluster_dims__(...)` and `__maxnreg__(...)` attributes, and each `#pragma unroll` line that is
    an unbraced loop's body."""
    return _parse_whole(source)[1]


def _parse_whole(source: bytes) -> tuple[tree_sitter.Tree, list[tuple[int, int]]]:
    hidden = sorted((m.start(), m.end()) for m in _ATTRIBUTE.finditer(source) if _constant(m.group()))
    tree = _parse(source, hidden)
    for _ in range(_MAX_PASSES):
        if not tree.root_node.has_error:
            break
        pragmas = [(n.start_byte, n.end_byte) for n in walk(tree.root_node) if _loop_body_pragma(n, source)]
        if not pragmas:
            break
        hidden = sorted(hidden + pragmas)
        tree = _parse(source, hidden)
    return tree, hidden


def hidden_pragmas(node) -> list[str]:
    """The arguments (`unroll 4`) of the `#pragma` lines `parse` left out of the tree directly before
    `node`: the unroll pragmas of an unbraced loop body, which the tree does not hold."""
    before, parent = node.prev_sibling, node.parent
    if before is None or parent is None:
        return []
    gap = parent.text[before.end_byte - parent.start_byte:node.start_byte - parent.start_byte]
    return [m.group().decode("utf-8", errors="replace").split("pragma", 1)[1].strip()
            for m in _LOOP_PRAGMA.finditer(gap)]


def _constant(construct: bytes) -> bool:
    argument = construct[construct.index(b"("):]
    return _CALL.search(argument) is None


def _loop_body_pragma(node, source: bytes) -> bool:
    """A `#pragma unroll` the grammar read as a statement after a loop (or if) whose body it left
    missing: in the source it is the first line of that body."""
    if node.type != "preproc_call" or node.prev_sibling is None:
        return False
    directive = _LOOP_PRAGMA.fullmatch(source[node.start_byte:node.end_byte].rstrip())
    if directive is None or not _constant(b"(" + source[node.start_byte:node.end_byte].split(b"unroll", 1)[1] + b")"):
        return False
    last = node.prev_sibling
    while last.child_count:
        last = last.children[-1]
    return last.is_missing


def _parse(source: bytes, hidden: list[tuple[int, int]]) -> tree_sitter.Tree:
    reader = parser()
    reader.included_ranges = _included(source, hidden)
    try:
        return reader.parse(source)
    finally:
        reader.included_ranges = _included(b"", [])     # `parser()` reads whole documents for its other callers


def _included(source: bytes, hidden: list[tuple[int, int]]) -> list[tree_sitter.Range]:
    def point(offset: int) -> tuple[int, int]:
        return source.count(b"\n", 0, offset), offset - (source.rfind(b"\n", 0, offset) + 1)

    ranges, start = [], 0
    for begin, end in hidden:
        if begin > start:
            ranges.append(tree_sitter.Range(point(start), point(begin), start, begin))
        start = max(start, end)
    ranges.append(tree_sitter.Range(point(start), (0xFFFFFFFF, 0xFFFFFFFF), start, 0xFFFFFFFF))
    return ranges


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
