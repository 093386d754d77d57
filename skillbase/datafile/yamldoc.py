"""Read a YAML file and remember the line of every value, so traces and errors can say `file:line`.

PyYAML's composer keeps a start mark on every node; we construct the plain Python data from the
same node tree and walk both together, recording `path -> line` (paths look like
`when.all[1].any[0]`, the notation the trace uses). libyaml is used when present (much faster).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from skillbase.errors import InputError

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SYNTAX_HINT = "fix the YAML syntax (indentation, quotes, colons)"


class YamlSyntaxError(InputError):
    """A file that is not valid YAML: the message is `file:line:col: problem`; `line`, `column`
    (1-based, None when the parser gives no position) and `problem` let callers word it their way."""

    def __init__(self, path: Path, problem: str, line: int | None = None, column: int | None = None):
        if line is None:
            super().__init__(f"{path}: invalid YAML ({problem})", SYNTAX_HINT)
        else:
            super().__init__(f"{path}:{line}:{column}: {problem}", SYNTAX_HINT)
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


def load_yaml(path: Path | str, text: str | None = None) -> YamlDoc:
    """Parse one YAML document; syntax errors become a one-line `file:line:col: problem` YamlSyntaxError."""
    path = Path(path)
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"{path}: cannot read ({error})") from None
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = error.problem or error.context or "invalid YAML"
        if mark is None:
            raise YamlSyntaxError(path, problem) from None
        raise YamlSyntaxError(path, problem, mark.line + 1, mark.column + 1) from None
    except yaml.YAMLError as error:
        raise YamlSyntaxError(path, str(error).splitlines()[0]) from None
    finally:
        loader.dispose()
    lines: dict[str, int] = {}
    if node is not None:
        _walk(node, "", lines)
    return YamlDoc(path, data, lines)


def _walk(node: yaml.Node, path: str, lines: dict[str, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            _walk(value_node, join(path, key), lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, child in enumerate(node.value):
            _walk(child, join(path, index), lines)
