"""Read a YAML file and remember the line of every value, so traces and errors can say `file:line`.

PyYAML's composer keeps a start mark on every node; we construct the plain Python data from the
same node tree and walk both together, recording `path -> line` (paths look like
`when.all[1].any[0]`, the notation the trace uses). libyaml is used when present (much faster).

Every YAML file skillbase reads (task specs, skills, rules, cases, thresholds, vocabularies, bench
metadata) comes through `load_yaml`, because these files are shared between users: a file is at
most MAX_BYTES of UTF-8, nests at most MAX_DEPTH levels, uses no aliases (`*name`: a 1.5 KB file
of aliases expands to gigabytes) and repeats no key in a mapping (PyYAML keeps the last one
silently). Each refusal names the file and line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from skillbase.errors import InputError

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SYNTAX_HINT = "fix the YAML syntax (indentation, quotes, colons)"
MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64


class _ExponentLoader(_Loader):
    """Reads `1e-4` as a float: PyYAML follows YAML 1.1, which needs `1.0e-4`, and a tolerance
    silently loaded as the string '1e-4' would be a confusing schema error (task specs use it)."""


_ExponentLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                  |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                  |\.[0-9_]+(?:[eE][-+][0-9]+)?
                  |[-+]?\.(?:inf|Inf|INF)
                  |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."))


class YamlSyntaxError(InputError):
    """A file that is not valid YAML: the message is `file:line:col: problem`; `line`, `column`
    (1-based, None when the parser gives no position) and `problem` let callers word it their way."""

    def __init__(self, path: Path, problem: str, line: int | None = None, column: int | None = None,
                 hint: str = SYNTAX_HINT):
        if line is None:
            super().__init__(f"{path}: invalid YAML ({problem})", hint)
        else:
            super().__init__(f"{path}:{line}:{column}: {problem}", hint)
        self.path, self.problem, self.line, self.column = path, problem, line, column


class YamlDoc:
    """The data of one YAML file plus the 1-based line of every node, keyed by path."""

    __slots__ = ("path", "data", "lines")

    def __init__(self, path: Path, data: Any, lines: dict[str, int]):
        self.path = path
        self.data = data
        self.lines = lines

    def line(self, path: str, default: int | None = None) -> int:
        """Line of `path`, or of its closest recorded ancestor (a missing key points at its parent)."""
        while True:
            if path in self.lines:
                return self.lines[path]
            if not path:
                return default if default is not None else 1
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""

    def where(self, path: str) -> str:
        return f"{self.path}:{self.line(path)}"


def join(path: str, key: str | int) -> str:
    """Extend a trace path: `join("when.all", 1) == "when.all[1]"`, `join("when", "all") == "when.all"`."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def load_yaml(path: Path | str, text: str | None = None, exponent_floats: bool = False) -> YamlDoc:
    """Parse one YAML document; syntax errors and the limits above become a one-line
    `file:line:col: problem` YamlSyntaxError. `exponent_floats` reads `1e-4` as a float."""
    path = Path(path)
    if text is None:
        text = read_text(path)
    elif len(text) > MAX_BYTES:
        raise _too_big(path, len(text))
    loader = (_ExponentLoader if exponent_floats else _Loader)(text)
    try:
        node = loader.get_single_node()
        lines: dict[str, int] = {}
        if node is not None:
            _check_and_walk(path, node, lines)
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = error.problem or error.context or "invalid YAML"
        if mark is None:
            raise YamlSyntaxError(path, problem) from None
        raise YamlSyntaxError(path, problem, mark.line + 1, mark.column + 1) from None
    except yaml.YAMLError as error:
        raise YamlSyntaxError(path, str(error).splitlines()[0]) from None
    except (RecursionError, MemoryError):   # the depth check comes first; this is the last fence
        raise YamlSyntaxError(path, "too deeply nested or too large", hint=LIMIT_HINT) from None
    finally:
        loader.dispose()
    return YamlDoc(path, data, lines)


LIMIT_HINT = (f"a data file is at most {MAX_BYTES // (1024 * 1024)} MiB, nests at most {MAX_DEPTH} levels "
              "and uses no anchors/aliases")


def read_text(path: Path) -> str:
    """A data or source file's text: UTF-8 without NUL bytes, at most MAX_BYTES; anything else is a
    one-line InputError (a binary file given as a kernel or a spec, say)."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise _too_big(path, size)
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a file") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
    if len(raw) > MAX_BYTES:   # grew since stat, or a special file that reports no size
        raise _too_big(path, len(raw))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not UTF-8 text (byte {error.start})",
                         "save the file as UTF-8") from None
    if "\0" in text:
        line = text[: text.index("\0")].count("\n") + 1
        raise InputError(f"{path}:{line}: not text (a NUL byte)", "give a text file, not a binary one")
    return text


def _too_big(path: Path, size: int) -> InputError:
    return YamlSyntaxError(path, f"{size} bytes, larger than the {MAX_BYTES} a data file may be", hint=LIMIT_HINT)


def _check_and_walk(path: Path, root: yaml.Node, lines: dict[str, int]) -> None:
    """Record `path -> line` for every node, refusing aliases, deep nesting and repeated keys.
    Iterative, so no input can exhaust Python's stack here."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, str, int, int]] = [(root, "", 1, root.start_mark.line + 1)]
    while stack:   # (node, its path, its depth, the line to name if it turns out to be an alias)
        node, where, depth, line = stack.pop()
        if id(node) in seen:
            raise YamlSyntaxError(path, f"`{where or '(top level)'}` is an alias (*name); aliases are not allowed",
                                  line, 1, hint="write the value out in full")
        seen.add(id(node))
        if depth > MAX_DEPTH:
            raise YamlSyntaxError(path, f"nested more than {MAX_DEPTH} levels deep", line, 1, hint=LIMIT_HINT)
        lines[where] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            keys: dict[Any, int] = {}
            children: list[tuple[yaml.Node, str, int, int]] = []
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
                key_line = key_node.start_mark.line + 1
                if isinstance(key_node, yaml.ScalarNode):
                    if key in keys:
                        raise YamlSyntaxError(path, f"duplicate key `{key}` (first at line {keys[key]})", key_line,
                                              key_node.start_mark.column + 1, hint="keep one of the two")
                    keys[key] = key_line
                children.append((value_node, join(where, key), depth + 1, key_line))
            stack.extend(reversed(children))   # document order: the first alias met is the first written
        elif isinstance(node, yaml.SequenceNode):
            # an alias's own mark is its anchor's; the list it sits in is the nearest line we know
            stack.extend((child, join(where, index), depth + 1, lines[where])
                         for index, child in reversed(list(enumerate(node.value))))
