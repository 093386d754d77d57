"""A run whose every attempt failed for a reason outside the kernel (the LLM endpoint never answered)
ends `failed`, and `optimize` exits non-zero (issue 22: it ended "finished" with exit 0)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from loop_kit import REPORT

from skillbase.run.session import start_run
from skillbase.run.store import RunStore
from skillbase.run.types import Settings

pytestmark = pytest.mark.nvcc


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]   # nothing listens here once the socket closes


@pytest.fixture
def unreachable(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    monkeypatch.setenv("SKILLBASE_LLM_TIMEOUT", "0.5")
    monkeypatch.setenv("SKILLBASE_LLM_RETRIES", "1")


def test_every_attempt_failing_on_the_endpoint_fails_the_run(task, tmp_path, unreachable):
    summary = start_run(task, Settings(rounds=2, repairs=0, agent="openai", model="m"), store_path=tmp_path / "s",
                        gpu=False, saved_report=REPORT, progress=lambda message: None)
    assert summary["status"] == "failed"
    assert "LLM endpoint did not answer" in summary["stop_reason"]
    store = RunStore.open(tmp_path / "s", read_only=True)
    statuses = {a["status"] for a in store.attempts(store.get_run(summary["run"]).id)}
    assert statuses == {"llm-error"}


def test_optimize_exits_non_zero_for_such_a_run(task, tmp_path, unreachable):
    done = subprocess.run([sys.executable, "-m", "skillbase", "optimize", str(task), "--agent", "openai",
                           "--model", "m", "--rounds", "1", "--repairs", "0", "--no-gpu", "--report", str(REPORT),
                           "--store", str(tmp_path / "s"), "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr[-2000:]
    assert '"status": "failed"' in done.stdout and "Traceback" not in done.stderr
