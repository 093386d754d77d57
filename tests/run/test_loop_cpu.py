"""The whole loop on a machine without a GPU, up to the compile step.

Real components throughout: the engine ranks skills from the naive-GEMM fixture's saved H200 report,
the coder and debugger talk to a local OpenAI-compatible server over HTTP, nvcc builds every
candidate, the static check rejects a cheating one, and the run store records every step. Without a
GPU nothing can be verified or timed, so nothing may be accepted: that is asserted too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from llm_server import ScriptedLLM, Step
from loop_kit import BROKEN, CHEAT, REPORT, TILED, fenced

from skillbase.errors import InputError
from skillbase.run.session import resume_run, start_run
from skillbase.run.store import RunStore
from skillbase.run.types import Settings

pytestmark = pytest.mark.nvcc


def _redact(text: str, tmp_path: Path) -> str:
    text = text.replace(str(tmp_path), "<tmp>")
    text = re.sub(r"\b[0-9a-f]{12,64}\b", "<digest>", text)
    text = re.sub(r"sha256:[0-9a-f]+", "sha256:<digest>", text)
    text = re.sub(r"run_\d+", "run_N", text)
    text = re.sub(r"nvcc=Build \S+", "nvcc=<v>", text)
    text = re.sub(r"(skillbase_version|git|nvcc|gpu|driver)=\S+", r"\1=<v>", text)
    # Token counts follow the prompt's length (the test server counts characters), which changes with
    # every edit of a skill card; the snapshot is about decisions, not prompt size.
    text = re.sub(r"\d+\+\d+ tokens", "N+N tokens", text)
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", text)
    text = re.sub(r"/\S*/rules/thresholds/", "<rules>/thresholds/", text)
    return text


def test_loop_end_to_end_up_to_compile(task, tmp_path, monkeypatch):
    steps = [
        Step(content=fenced(BROKEN)),                      # r0: coder, does not compile
        Step(content="I think you should tile it."),       # r0: debugger answers without code
        Step(content=fenced(TILED)),                       # r0: debugger repairs it
        Step(content=fenced(CHEAT)),                       # r1: coder cheats (allocates in the launcher)
        Step(content="late", delay_s=2.0), Step(content="late", delay_s=2.0),   # r2: the endpoint times out
    ]
    monkeypatch.setenv("SKILLBASE_LLM_TIMEOUT", "0.5")
    monkeypatch.setenv("SKILLBASE_LLM_RETRIES", "2")
    store_path = tmp_path / "store"
    original = task.read_text()
    messages = []
    with ScriptedLLM(steps) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        summary = start_run(task, Settings(rounds=3, repairs=2, agent="openai", model="scripted"),
                            store_path=store_path, gpu=False, saved_report=REPORT, progress=messages.append)
        requests = list(server.requests)

    assert summary["status"] == "finished" and summary["speedup"] is None, messages
    store = RunStore.open(store_path)
    run = store.get_run(summary["run"])
    attempts = store.attempts(run.id)
    statuses = [(a["round_idx"], a["attempt_idx"], a["status"]) for a in attempts]
    assert statuses == [(0, 0, "build-failed"), (0, 1, "no-code"), (0, 2, "unverified"), (1, 0, "rejected-static"),
                        (2, 0, "llm-error")], messages
    assert summary["stop_reason"] == "ran 3 rounds"
    assert "error" in attempts[0]["reason"]
    cheat = next(a for a in attempts if a["status"] == "rejected-static")
    assert "cudaMalloc" in cheat["reason"] or "alloc" in cheat["reason"].lower()
    # Nothing is accepted without a GPU to verify and time it.
    assert all(r["outcome"] != "accepted" for r in store.rounds(run.id))
    # Round 0 chose the skill an expert would for a naive GEMM, from the real profile.
    decisions = store.decisions(run.id)
    assert decisions[0]["chosen_skill"] == "mem.smem_tiling"
    # The tabu list keeps a skill from being retried on the same kernel.
    chosen = [d["chosen_skill"] for d in decisions if d["chosen_skill"]]
    assert len(chosen) == len(set(chosen)) == 3
    # The coder saw the skill card and the filtered evidence; the debugger saw the compiler error.
    coder_prompt = requests[0]["messages"][-1]["content"]
    assert "mem.smem_tiling" in coder_prompt and "sgemm_naive" in coder_prompt
    debugger_prompt = requests[1]["messages"][-1]["content"]
    assert "no fenced code block" in requests[2]["messages"][-1]["content"]
    assert "error" in debugger_prompt and "float acc = 0.0f\n" in debugger_prompt
    calls = store.llm_calls(run.id)
    assert [c["role"] for c in calls] == ["coder", "debugger", "debugger", "coder", "coder"]
    assert calls[0]["prompt_version"] == "coder.v3" and calls[0]["prompt_tokens"] > 0
    # A compile-only run times nothing: its coder is told the figures are unknown, not shown zeros.
    assert "## Where the kernel stands" in coder_prompt and "unknown (this run has not timed a kernel)" in coder_prompt
    assert any("APITimeoutError" in (c["error"] or "") for c in calls)
    # The API key never reaches the store.
    blob = (store_path / "runs.sqlite3").read_bytes() + b"".join(
        p.read_bytes() for p in (store_path / "artifacts").rglob("*") if p.is_file())
    assert b"sk-loop-test-secret" not in blob
    assert run.manifest["endpoint"].startswith("127.0.0.1:")
    # The user's kernel is untouched.
    assert task.read_text() == original
    # `explain` replays the run from the store alone; compared with a golden snapshot (volatile
    # fields redacted: paths, digests, versions, timestamps).
    from skillbase.run.explain import explain_run, render_text

    text = _redact(render_text(explain_run(store, run.name)), tmp_path)
    golden = Path(__file__).resolve().parents[1] / "golden" / "explain_loop_cpu.txt"
    if os.environ.get("SKILLBASE_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    failed = render_text(explain_run(store, run.name, fails_only=True))
    assert "not fired:" in failed and "unverified" not in failed


def test_interrupted_run_resumes_without_redoing_steps(task, tmp_path, monkeypatch):
    store_path = tmp_path / "store"
    steps = [Step(content=fenced(TILED)), Step(content=fenced(TILED.replace("16", "32")))]

    def interrupt_in_round_1(message: str) -> None:
        if message.startswith("round 1: collecting evidence"):
            raise KeyboardInterrupt

    with ScriptedLLM(steps) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        with pytest.raises(KeyboardInterrupt):
            start_run(task, Settings(rounds=2, repairs=0, agent="openai", model="scripted"), store_path=store_path,
                      gpu=False, saved_report=REPORT, progress=interrupt_in_round_1)
        store = RunStore.open(store_path)
        run = store.list_runs()[0]
        assert run.status == "interrupted"
        assert len(server.requests) == 1
        summary = resume_run(run.name, store_path=store_path, progress=lambda m: None)
        # Round 0 was replayed from the store: exactly one more LLM call, for round 1.
        assert len(server.requests) == 2
    assert summary["status"] == "finished"
    assert [r["round"] for r in summary["rounds"]] == [0, 1]
    with pytest.raises(InputError, match="already finished"):
        resume_run(run.name, store_path=store_path)


def test_external_agent_pauses_and_resumes_with_a_candidate(task, tmp_path, monkeypatch):
    store_path = tmp_path / "store"
    summary = start_run(task, Settings(rounds=1, repairs=0, agent="external"), store_path=store_path, gpu=False,
                        saved_report=REPORT, progress=lambda m: None)
    assert summary["status"] == "paused"
    store = RunStore.open(store_path)
    run = store.get_run(summary["run"])
    waiting = json.loads((store_path / "runs" / run.name / "waiting.json").read_text())
    prompt = Path(waiting["prompt"]).read_text()
    assert "mem.smem_tiling" in prompt and "extern \"C\"" in prompt
    with pytest.raises(InputError, match="not waiting"):
        resume_run("run_999", store_path=store_path) if False else None
        store.update_run(run.id, status="interrupted")
        resume_run(run.name, store_path=store_path, candidate=TILED)
    store.update_run(run.id, status="paused")
    summary = resume_run(run.name, store_path=store_path, candidate=TILED, progress=lambda m: None)
    assert summary["status"] == "finished"
    attempts = store.attempts(run.id)
    assert [a["status"] for a in attempts] == ["unverified"]


def test_changed_task_refuses_to_resume(task, tmp_path):
    store_path = tmp_path / "store"
    summary = start_run(task, Settings(rounds=1, repairs=0, agent="external"), store_path=store_path, gpu=False,
                        saved_report=REPORT, progress=lambda m: None)
    task.write_text(task.read_text() + "\n// edited\n")
    with pytest.raises(InputError, match="changed since"):
        resume_run(summary["run"], store_path=store_path, candidate=TILED)


def test_mechanical_mode_sweeps_annotated_tunables(tmp_path, monkeypatch):
    """`--agent none` on the bundled naive SGEMM: its block shape is swept, each variant built by nvcc."""
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "task"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "naive_sgemm", folder)
    kernel = folder / "naive_sgemm.cu"
    store_path = tmp_path / "store"
    summary = start_run(kernel, Settings(rounds=3, repairs=0, agent="none", sweep_limit=3), store_path=store_path,
                        gpu=False, progress=lambda m: None)
    store = RunStore.open(store_path)
    run = store.get_run(summary["run"])
    decisions = store.decisions(run.id)
    assert decisions[0]["chosen_skill"] == "tune.parameter_sweep"
    attempts = store.attempts(run.id, 0)
    params = [json.loads(a["params_json"]) for a in attempts]
    assert params == [{"BLOCK_X": "32"}, {"BLOCK_X": "64"}, {"BLOCK_Y": "2"}]
    assert all(a["status"] == "unverified" for a in attempts)
    # The variants really differ: each attempt's kernel is a distinct artifact with the new value.
    sources = [store.artifacts.get_text(a["kernel"]) for a in attempts]
    assert "#define BLOCK_X 32" in sources[0] and "#define BLOCK_Y 2" in sources[2]
    # Once swept, the same kernel is not swept again: the loop stops for want of candidates.
    assert decisions[1]["chosen_skill"] is None and summary["stop_reason"].startswith("no candidate left")


def test_a_run_records_what_past_runs_said_about_each_skill(tmp_path, monkeypatch):
    """The session's evidence carries `history.past` (the store's other runs, per skill): the second
    run on the same store sees the first's sweep, and `explain` shows it beside the candidate."""
    monkeypatch.setenv("SKILLBASE_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "task"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "naive_sgemm", folder)
    store_path = tmp_path / "store"
    runs = [start_run(folder / "naive_sgemm.cu", Settings(rounds=1, repairs=0, agent="none", sweep_limit=1),
                      store_path=store_path, gpu=False, progress=lambda m: None)["run"] for _ in range(2)]
    store = RunStore.open(store_path)
    documents = [json.loads(store.artifacts.get_text(store.evidence_rows(store.get_run(r).id)[0]["document"]))
                 for r in runs]
    assert documents[0]["history"]["past"] == {}
    assert documents[1]["history"]["past"] == {
        "tune.parameter_sweep": {"tried": 1, "accepted": 0, "failed": 1, "mean_accepted_speedup": None}}
    from skillbase.run.explain import explain_run, render_text

    assert "past runs" not in render_text(explain_run(store, runs[0]))
    assert any("tune.parameter_sweep" in line and line.endswith("past runs: accepted 0 of 1")
               for line in render_text(explain_run(store, runs[1])).splitlines())
