"""The one exception type users see: a one-line, actionable message, never a traceback."""

from __future__ import annotations


class SkillbaseError(Exception):
    """An error caused by the user's input or environment, with the fix when we know it.

    The CLI prints ``error: <message>`` (and ``hint: <fix>`` when given) and exits non-zero.
    """

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class InputError(SkillbaseError):
    """A file the user gave us is missing, malformed or inconsistent."""


class EnvironmentProblem(SkillbaseError):
    """A tool or device the command needs is absent (no GPU, no nvcc, no ncu, no counters)."""

    exit_code = 3
