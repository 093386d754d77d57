"""One problem found in a data file (rule, skill, task spec, cases): `file:line: message (hint)`, an
error or a warning; and the one did-you-mean every such message uses."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from skillbase.errors import InputError, one_line


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None  # None: the problem is about the file (or folder) as a whole
    message: str
    hint: str | None = None
    severity: str = "error"  # error | warning
    path_key: str | None = None  # the top-level key the problem is about (lets loaders skip it)
    column: int | None = None  # YAML syntax errors know it

    def __str__(self) -> str:
        hint = f" ({self.hint})" if self.hint else ""
        return one_line(f"{self.where}: {self.message}{hint}")   # one problem, one line, whatever the file held

    @property
    def where(self) -> str:
        """`file:line[:column]`, or the file alone when no line is known."""
        if self.line is None:
            return self.file
        column = f":{self.column}" if self.column else ""
        return f"{self.file}:{self.line}{column}"

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "message": self.message, "hint": self.hint,
                "severity": self.severity}

    @classmethod
    def from_input_error(cls, error: InputError, file: str) -> Problem:
        """An InputError whose message starts with `file:line[:col]: ` (YAML syntax errors)."""
        match = re.match(r"^(.*?):(\d+)(?::(\d+))?: (.*)$", error.message)
        if match and match.group(1) == file:
            column = int(match.group(3)) if match.group(3) else None
            return cls(file, int(match.group(2)), match.group(4), error.hint, column=column)
        message = error.message[len(file) + 2:] if error.message.startswith(file + ": ") else error.message
        return cls(file, 1, message, error.hint)


def sort_key(problem: Problem) -> tuple:
    return (problem.file, problem.line or 0, problem.message)


def suggestions(word: str, choices: Iterable[str], n: int = 1, cutoff: float = 0.6) -> list[str]:
    """The closest of `choices` to `word` (at most `n`, best first): every did-you-mean uses this."""
    return difflib.get_close_matches(str(word), [str(c) for c in choices], n=n, cutoff=cutoff)


def did_you_mean(word: str, choices: Iterable[str], n: int = 1, cutoff: float = 0.6, quote: str = "`") -> str | None:
    """"did you mean `a` or `b`?" for the closest choices, or None when nothing is close.

    `quote` is the mark around each choice: backticks in rule-set messages, `'` where the
    surrounding message quotes names that way (skills, task specs)."""
    close = suggestions(word, choices, n=n, cutoff=cutoff)
    return "did you mean " + " or ".join(f"{quote}{c}{quote}" for c in close) + "?" if close else None
