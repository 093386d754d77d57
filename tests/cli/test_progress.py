"""ui.progress: a bar with counts and an ETA on a terminal, one line per step when piped (issue 19)."""

from __future__ import annotations

import io
import re

from rich.console import Console

from skillbase import ui


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=100, color_system=None), out


def test_piped_output_is_one_line_per_step_with_counts():
    output, out = _console(terminal=False)
    with ui.progress("verifying examples", output) as bar:
        bar.step(0, 3)                                 # the total, known before the first item: no line
        bar.note("building 3 examples")
        for done in (1, 2, 3):
            bar.step(done, 3, f"ex{done}: faster")
    lines = out.getvalue().splitlines()
    assert lines[0] == "building 3 examples"
    assert re.fullmatch(r"\[1/3, ~\d+s left\] ex1: faster", lines[1]), lines
    assert lines[3] == "[3/3] ex3: faster"          # nothing is left after the last one
    assert "\x1b" not in out.getvalue() and "━" not in out.getvalue()   # no bar, no escape codes in a log


def test_a_terminal_gets_a_bar_with_done_of_total_and_the_lines_above_it():
    output, out = _console(terminal=True)
    with ui.progress("bench run", output) as bar:
        for done in range(1, 5):
            bar.step(done, 4, f"relu fp32 s: verified {done}")
    text = out.getvalue()
    assert "bench run" in text and "4/4" in text and "━" in text
    assert "relu fp32 s: verified 3" in text and "[3/4" not in text     # the bar counts; lines stay plain
    assert "eta" in text


def test_the_eta_is_the_mean_pace_times_what_is_left(monkeypatch):
    clock = iter([100.0, 160.0])
    monkeypatch.setattr(ui.time, "monotonic", lambda: next(clock))
    bar = ui.Progress("x", _console(terminal=False)[0])         # started at t=100
    assert bar.eta(2, 5) == "1m30s"                                # 60 s for 2 -> 90 s for the 3 left
    assert bar.eta(0, 5) is None and bar.eta(5, 5) is None
