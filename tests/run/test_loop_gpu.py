"""The whole optimisation loop on a GPU, end to end, against a scripted OpenAI-compatible server.

The same real components as tests/test_loop_cpu.py, but nothing stops at the compile step: ncu
profiles each round's kernel, the harness verifies and times every candidate against the current
best, and only a verified speedup is accepted. The scripted answers walk through what an LLM does:
an improvement, a compile error, a wrong answer, a reply without code, a cheat, a timeout.
"""

from __future__ import annotations

import os

import pytest
from llm_server import ScriptedLLM, Step
from loop_kit import CHEAT, TILED, fenced

from skillbase.run.session import start_run
from skillbase.run.store import RunStore
from skillbase.run.types import Settings

pytestmark = [pytest.mark.gpu, pytest.mark.nvcc]

BROKEN = TILED.replace("float acc = 0.0f;", "float acc = 0.0f")
# Compiles and runs, reads B transposed: outside tolerance on every size.
WRONG = TILED.replace("acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];",
                      "acc += As[threadIdx.y][k] * Bs[threadIdx.x][k];")


def test_loop_end_to_end_on_the_gpu(task, tmp_path, monkeypatch):
    assert WRONG != TILED and BROKEN != TILED
    steps = [
        Step(content=fenced(TILED)),                        # r0 coder: shared-memory tiling, a real speedup
        Step(content=fenced(BROKEN)),                       # r1 coder: a compile error
        Step(content=fenced(WRONG)),                        # r1 debugger: compiles, wrong answer
        Step(content="The indexing looks right to me."),    # r1 debugger: no code
        Step(content=fenced(CHEAT)),                        # r2 coder: allocates inside the launcher
        Step(content="late", delay_s=2.0), Step(content="late", delay_s=2.0),   # r3: the endpoint times out
    ]
    monkeypatch.setenv("SKILLBASE_LLM_TIMEOUT", "0.5")
    monkeypatch.setenv("SKILLBASE_LLM_RETRIES", "2")
    store_path = tmp_path / "store"
    original = task.read_text()
    messages: list[str] = []
    with ScriptedLLM(steps) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        summary = start_run(task, Settings(rounds=4, repairs=2, agent="openai", model="scripted"),
                            store_path=store_path, gpu=True, progress=messages.append)

    store = RunStore.open(store_path)
    run = store.get_run(summary["run"])
    attempts = store.attempts(run.id)
    statuses = [(a["round_idx"], a["status"]) for a in attempts]
    # The tiled kernel is verified and faster than the naive one: accepted in round 0, the run's best.
    assert (0, "accepted") in statuses, (statuses, messages)
    assert summary["speedup"] and summary["speedup"] > 1.0, summary
    # Every failure is recorded with what went wrong; none of them is accepted.
    seen = {s for _, s in statuses}
    assert {"build-failed", "incorrect", "no-code", "rejected-static", "llm-error"} <= seen, statuses
    wrong = next(a for a in attempts if a["status"] == "incorrect")
    assert "outside tolerance" in wrong["reason"], wrong["reason"]
    assert sum(1 for _, s in statuses if s == "accepted") == 1, statuses
    # The best kernel is the tiled one, written into the run, never over the user's file.
    assert task.read_text() == original
    best = store_path / "runs" / run.name / "best.cu"
    assert best.is_file() and "sgemm_tiled" in best.read_text()
    # explain replays it from the store alone.
    from skillbase.run.explain import explain_run, render_text

    text = render_text(explain_run(store, run.name))
    assert "accepted" in text and "rejected-static" in text
    assert os.environ.get("OPENAI_API_KEY", "") not in (store_path / "runs.sqlite3").read_text(errors="ignore")
