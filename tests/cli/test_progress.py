"""ui.progress: a bar with counts and an ETA on a terminal, one line per step when piped (issue 19)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
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


# ---- the long commands that use it: bench optimize and resume --all --------------------------------

def _batch_cli(*argv: str):
    from click.testing import CliRunner

    from skillbase.cli import cli

    result = CliRunner().invoke(cli, list(argv), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def _pending(store) -> dict[str, dict]:
    document = json.loads(_batch_cli("pending", "--store", str(store), "--json").stdout)
    return {p["operator"]: p for p in document["prompts"]}


@pytest.fixture
def batch_store(tmp_path, monkeypatch):
    """Where a compile-only batch of two operators of the shipped suite lands."""
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "store"


OPTIMIZE = ("bench", "optimize", "--agent", "external", "--no-engine", "--no-gpu", "--ops", "relu,gelu",
            "--rounds", "1", "--repairs", "0")


@pytest.mark.nvcc
def test_bench_optimize_and_resume_all_log_one_counted_line_per_run_when_piped(batch_store):
    from skillbase.bench.suite import bench_dir

    started = _batch_cli(*OPTIMIZE, "--store", str(batch_store))
    runs = re.findall(r"^\[(\d)/2(?:, ~\d+s left)?\] (run_\d+): started(?: in [\d.]+ s)? -- ",
                      started.stderr, re.MULTILINE)
    assert [done for done, _ in runs] == ["1", "2"], started.stderr      # counted in the order they paused
    assert started.stderr.splitlines()[1].startswith("[2/2] ")          # nothing left after the last one
    assert "━" not in started.stderr and "\x1b" not in started.stderr

    relu = _pending(batch_store)["relu"]
    Path(relu["candidate"]).write_text("// a candidate\n" + (bench_dir() / "ops" / "relu" / "fp32.cu").read_text())
    judged = _batch_cli("resume", "--all", "--store", str(batch_store))
    assert re.search(rf"^\[1/1\] {relu['run']}: judged(?: in [\d.]+ s)? -- ", judged.stderr, re.M), judged.stderr
    # with --json, stderr stays free of progress: stdout is the batch document
    again = _batch_cli("resume", "--all", "--store", str(batch_store), "--json")
    assert again.stderr == "" and json.loads(again.stdout)["schema_version"] == 1


@pytest.mark.nvcc
def test_bench_optimize_on_a_terminal_draws_a_bar_with_the_run_count(batch_store, monkeypatch):
    terminal, out = _console(terminal=True)
    monkeypatch.setattr(ui, "console", lambda **options: terminal)
    _batch_cli(*OPTIMIZE, "--store", str(batch_store))
    text = out.getvalue()
    assert "bench optimize (external)" in text and "2/2" in text and "━" in text and "eta" in text
    assert len(re.findall(r"run_\d+: started(?: in [\d.]+ s)? -- ", text)) == 2 and "[1/2" not in text
