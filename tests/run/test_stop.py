"""`skillbase stop run_N --reason ...`: a paused run ended by hand keeps its record, leaves `pending` and
`resume --all`, and explains itself; anything else is a one-line refusal with a non-zero exit, which changes
nothing in the store.

    python -m pytest -q -p no:cacheprovider tests/run/test_stop.py
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from skillbase.documents import schema_path
from skillbase.run.batch import resume_all
from skillbase.run.pending import list_pending
from skillbase.run.store import RunStore

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "naive_sgemm"

pytestmark = pytest.mark.nvcc


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "skillbase", *map(str, args)], capture_output=True, text=True)


@pytest.fixture()
def paused(tmp_path) -> Path:
    """A compile-only external run paused at its first prompt (the saved H200 report is its evidence)."""
    shutil.copytree(EXAMPLE, tmp_path / "sg")
    store = tmp_path / "store"
    done = cli("optimize", tmp_path / "sg" / "naive_sgemm.cu", "--agent", "external", "--no-gpu", "--store", store,
               "--report", tmp_path / "sg" / "naive_sgemm.h200.ncu-rep.xz", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "paused"
    return store


def test_a_stopped_run_is_finished_with_its_reason_and_waits_no_more(paused):
    reason = f"no answer can help it ({random.randrange(10**6)})"
    prompt = list_pending(paused)[0]
    prompt.candidate_path.parent.mkdir(parents=True, exist_ok=True)
    prompt.candidate_path.write_text((EXAMPLE / "naive_sgemm.cu").read_text())   # an answer left lying there
    done = cli("stop", "run_1", "--reason", f"  {reason} ", "--store", paused, "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    jsonschema.Draft202012Validator(json.loads(schema_path("run-summary").read_text())).validate(summary)
    assert (summary["run"], summary["status"], summary["stop_reason"]) == ("run_1", "finished",
                                                                           f"stopped by hand: {reason}")
    assert summary["pending"] is None and list_pending(paused) == []
    assert resume_all(paused).members == []                  # the answer lying there is not judged
    store = RunStore.open(paused, read_only=True)
    try:
        assert store.last_event(1, "stopped") == {"reason": reason, "was": "paused"}
        assert [r["idx"] for r in store.rounds(1)] == [0]     # its record kept
    finally:
        store.close()
    explained = cli("explain", "run_1", "--store", paused)
    assert explained.returncode == 0 and f"stopped by hand: {reason}" in explained.stdout


def test_bad_stops_are_one_line_refusals_that_change_nothing(paused):
    before = (paused / "runs.sqlite3").read_bytes()
    for args, first_line in [
        (("run_1", "--reason", "   "), "error: a stop needs a reason (it is the run's stop reason, shown by runs and "
                                      "explain)"),
        (("run_7", "--reason", "x"), f"error: no run run_7 in the store at {paused}"),
    ]:
        done = cli("stop", *args, "--store", paused)
        assert done.returncode == 2 and done.stderr.splitlines()[0] == first_line, done.stderr
        assert "Traceback" not in done.stderr
    done = cli("stop", "run_1", "--store", paused)
    assert done.returncode == 2 and "Missing option '--reason'" in done.stderr
    assert (paused / "runs.sqlite3").read_bytes() == before
    assert cli("stop", "run_1", "--reason", "first", "--store", paused).returncode == 0
    again = cli("stop", "run_1", "--reason", "second", "--store", paused)
    assert again.returncode == 2
    assert again.stderr.splitlines()[0] == ("error: run_1 is finished (stopped by hand: first): only a paused or "
                                            "interrupted run can be stopped")
