"""Errors and problems stay one line whatever the user's file held (found by the fuzz suite, issue 22:
a spec key "\\n" split an error in two)."""

from __future__ import annotations

from skillbase.datafile.problems import Problem
from skillbase.errors import InputError


def test_control_characters_in_a_message_are_escaped():
    error = InputError("k.task.yaml: args[0].\n: unknown field '\n\x00'", "did you mean\t'x'?")
    assert error.message == "k.task.yaml: args[0].\\n: unknown field '\\n\\x00'"
    assert error.hint == "did you mean\\t'x'?"
    assert InputError("plain é message").message == "plain é message"


def test_a_problem_prints_on_one_line():
    assert str(Problem("r.yaml", 3, "unknown name `a\nb`", "hint\r")) == "r.yaml:3: unknown name `a\\nb` (hint\\r)"
