"""The one exception type users see: a one-line, actionable message, never a traceback; and the
table of exit codes every command keeps (docs/cli.md's "Exit codes" section is generated from it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ExitCode:
    code: int
    kind: str        # the `error.kind` of a JSON error object
    meaning: str


EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(0, "ok", "the command did what was asked (for `check`, `lint`, `rules test`: nothing was found)"),
    ExitCode(1, "findings", "the command ran and its answer is \"no\": `check` rejected the kernel, `lint` found "
                            "errors, `rules validate`/`rules test`/`skills validate` found problems, `doctor` misses "
                            "a required tool"),
    ExitCode(2, "input", "bad input or usage: a missing or malformed file, an unknown option or value, a file that "
                         "would be overwritten without `--force`"),
    ExitCode(3, "environment", "a tool or device the command needs is absent: no GPU, nvcc, ncu, counter access "
                               "or optional extra"),
    ExitCode(130, "interrupted", "interrupted (Ctrl-C) or aborted at a prompt"),
)
ERROR_SCHEMA_VERSION = 1


class SkillbaseError(Exception):
    """An error caused by the user's input or environment, with the fix when we know it.

    The CLI prints ``error: <message>`` (and ``hint: <fix>`` when given) and exits non-zero; with
    ``--json`` it prints `error_document(...)` on stdout instead.
    """

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None):
        message = one_line(message)
        super().__init__(message)
        self.message = message
        self.hint = None if hint is None else one_line(hint)

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class InputError(SkillbaseError):
    """A file the user gave us is missing, malformed or inconsistent."""


class EnvironmentProblem(SkillbaseError):
    """A tool or device the command needs is absent (no GPU, no nvcc, no ncu, no counters)."""

    exit_code = 3


def exit_kind(code: int) -> str:
    """The name of an exit code in `EXIT_CODES` (`error` for a code outside the table)."""
    return next((e.kind for e in EXIT_CODES if e.code == code), "error")


def error_document(message: str, hint: str | None, exit_code: int) -> dict[str, Any]:
    """What a command run with `--json` prints on stdout when it fails (schemas/error.schema.json)."""
    return {"schema_version": ERROR_SCHEMA_VERSION,
            "error": {"message": message, "hint": hint, "kind": exit_kind(exit_code), "exit_code": exit_code}}


def one_line(text: str) -> str:
    """`text` on one line: messages quote names from users' files, and a key such as "a\\nb" must not
    break the one-line error into two (line breaks and other control characters are escaped)."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in text)
