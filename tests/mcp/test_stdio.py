"""`skillbase mcp` as a coding agent meets it: a client from the same MCP SDK starts the server over
stdio in a scratch folder holding a bundled example, and calls every tool that needs no GPU, the
external loop on a compile-only run (optimize_start -> pending -> submit_candidate -> explain ->
report) and bad calls, each of which is a one-sentence tool error after which the server keeps serving.

One server serves the whole module (its start-up imports the library once); the run's steps are
tests in order, each reading the state the one before left.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from skillbase import api

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "naive_sgemm"
TOOLS = {"advise", "evidence", "skills_search", "skills_show", "rules_explain", "check", "profile", "optimize_start",
         "pending", "submit_candidate", "stop_run", "explain", "report"}

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("agent")
    shutil.copytree(EXAMPLE, folder / "sg")
    (folder / "outside").mkdir()
    return folder


@pytest.fixture(scope="module")
async def client(root):
    # `python -m skillbase` is the `skillbase` console script without depending on PATH.
    params = StdioServerParameters(command=sys.executable, args=["-m", "skillbase", "mcp", "--store", "store"],
                                   cwd=str(root))
    async with Client(params, read_timeout_seconds=300) as session:
        yield session


async def call(client, tool: str, arguments: dict, progress: list | None = None) -> dict:
    """The tool's structured result; fails the test on a tool error."""
    async def on_progress(done, total, message):
        progress.append(message)

    result = await client.call_tool(tool, arguments, progress_callback=on_progress if progress is not None else None)
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text) == result.structured_content   # the text is the same document
    return result.structured_content


async def error_of(client, tool: str, arguments: dict) -> str:
    """The text of a tool error: one line."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool}{arguments} succeeded: {result.content[0].text[:300]}"
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text, text
    return text


async def test_every_tool_declares_a_closed_json_schema(client):
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.input_schema["type"] == "object" and tool.input_schema["additionalProperties"] is False, tool.name
        assert tool.description
    assert tools["submit_candidate"].input_schema["required"] == ["run"]
    assert {"candidate_path", "candidate_source"} <= set(tools["submit_candidate"].input_schema["properties"])


async def test_advise_returns_the_librarys_own_document(client, root):
    got = await call(client, "advise", {"report": "sg/naive_sgemm.h200.ncu-rep.xz", "source": "sg/naive_sgemm.cu",
                                        "top": 3, "why_not": "mem.vectorize"})
    advice = api.advise(report=root / "sg/naive_sgemm.h200.ncu-rep.xz", source=root / "sg/naive_sgemm.cu")
    want = json.loads(json.dumps(api.advice_json(advice, top=3, why_not_skill="mem.vectorize"), default=str))
    assert got == want
    assert len(got["candidates"]) == 3 and got["focus_kernel"] == "sgemm_naive"
    assert got["why_not"]["skill"] == "mem.vectorize" and got["why_not"]["rules"]
    # the CLI's face prints the same document
    cli = subprocess.run([sys.executable, "-m", "skillbase", "advise", "--report", "sg/naive_sgemm.h200.ncu-rep.xz",
                          "--source", "sg/naive_sgemm.cu", "--top", "3", "--why-not", "mem.vectorize", "--json"],
                         cwd=root, capture_output=True, text=True, check=True)
    assert json.loads(cli.stdout) == got


async def test_evidence_of_a_report(client):
    got = await call(client, "evidence", {"report": "sg/naive_sgemm.h200.ncu-rep.xz"})
    assert got["focus_kernel"] == "sgemm_naive"
    assert got["kernels"][0]["metrics"], "the report's metrics are in the document"


async def test_skills_show_and_rules_explain(client, root):
    card = await call(client, "skills_show", {"skill": "mem.smem_tiling"})
    assert card["id"] == "mem.smem_tiling" and card["proposed_by"]
    rule = await call(client, "rules_explain", {"rule": "mem.smem_tiling.cache-reuse",
                                                "report": "sg/naive_sgemm.h200.ncu-rep.xz"})
    assert rule["proposes"][0]["skill"] == "mem.smem_tiling" and "l1_pct" in rule["reads"]
    assert rule["decision"]["fired"] is True      # the naive SGEMM re-reads its inputs through L1
    written = await call(client, "rules_explain", {"rule": "mem.smem_tiling.cache-reuse"})
    assert written["decision"] is None


@pytest.mark.slow
async def test_skills_search_finds_tiling_for_reuse(client):
    progress: list[str] = []
    got = await call(client, "skills_search", {"query": "data reused from global memory: stage tiles in shared "
                                                        "memory", "k": 3}, progress)
    assert len(got["hits"]) == 3
    assert "mem.smem_tiling" in [hit["skill_id"] for hit in got["hits"]]
    assert progress, "a long call reports progress"


async def test_gpu_tools_are_a_clear_tool_error_without_a_gpu(client):
    if api_gpu():
        pytest.skip("a GPU is present: tests/mcp/test_gpu.py covers check and profile")
    assert "no NVIDIA GPU found" in await error_of(client, "check", {"kernel": "sg/naive_sgemm.cu"})
    text = await error_of(client, "profile", {"kernel": "sg/naive_sgemm.cu"})
    assert "GPU" in text or "ncu" in text, text     # whichever the machine lacks first


def api_gpu() -> bool:
    from conftest import gpu_available

    return gpu_available()


# -- the external loop, compile-only (--no-gpu): each step reads what the one before left ----------

async def test_optimize_start_pauses_at_a_prompt(client):
    progress: list[str] = []
    got = await call(client, "optimize_start", {"kernel": "sg/naive_sgemm.cu", "no_gpu": True, "rounds": 2,
                                                "saved_report": "sg/naive_sgemm.h200.ncu-rep.xz"}, progress)
    assert got["run"] == "run_1" and got["summary"]["status"] == "paused"
    waiting = got["pending"]
    assert waiting["run"] == "run_1" and waiting["kind"] == "coder" and waiting["round"] == 0
    assert waiting["skill"] and waiting["skill"] in waiting["prompt_text"]
    assert any("collecting evidence" in message for message in progress), progress


async def test_pending_lists_the_waiting_run(client):
    got = await call(client, "pending", {})
    assert [p["run"] for p in got["pending"]] == ["run_1"]
    assert got["pending"][0]["prompt_text"].strip()


async def test_a_broken_candidate_is_judged_and_a_repair_is_asked(client):
    got = await call(client, "submit_candidate", {"run": "run_1", "candidate_source": "this is not CUDA {"})
    assert got["verdict"]["status"] in ("build-failed", "no-code"), got["verdict"]
    assert got["next"]["kind"] == "debugger" and got["next"]["round"] == 0


async def test_a_compiling_candidate_is_judged_and_the_next_round_asked(client, root):
    progress: list[str] = []
    got = await call(client, "submit_candidate", {"run": "run_1", "candidate_path": "sg/naive_sgemm.cu"}, progress)
    # A compile-only run never accepts: the kernel compiled and passed the static check.
    assert got["verdict"]["status"] == "unverified", got["verdict"]
    assert got["next"]["kind"] == "coder" and got["next"]["round"] == 1
    assert got["summary"]["status"] == "paused"
    assert progress


async def test_explain_and_report_read_the_store(client, root):
    got = await call(client, "explain", {"run": "run_1"})
    statuses = [a["status"] for a in got["rounds"][0]["attempts"]]
    assert statuses[-1] == "unverified" and len(statuses) == 2
    written = await call(client, "report", {"run": "run_1", "out": "reports"})
    assert Path(written["markdown"]).parent == root / "reports" and Path(written["html"]).is_file()


async def test_resources_are_skill_cards_and_run_records(client):
    resources = {str(r.uri) for r in (await client.list_resources()).resources}
    assert "skillbase://skills/mem.smem_tiling" in resources and "skillbase://runs/run_1" in resources
    card = (await client.read_resource("skillbase://skills/mem.smem_tiling")).contents[0]
    assert card.mime_type == "text/markdown" and "mem.smem_tiling" in card.text
    record = (await client.read_resource("skillbase://runs/run_1")).contents[0]
    assert json.loads(record.text)["run"] == "run_1"


# -- bad calls: one sentence each, and the server keeps serving ------------------------------------

async def test_bad_calls_are_one_sentence_tool_errors(client, root):
    assert "unknown argument `reportx`" in await error_of(client, "advise", {"reportx": "a.ncu-rep"})
    assert "argument `top`" in await error_of(client, "advise", {"report": "sg/naive_sgemm.h200.ncu-rep.xz",
                                                                 "top": "three"})
    assert "'skill' is a required property" in await error_of(client, "skills_show", {})
    outside = root.parent / "elsewhere.ncu-rep"
    assert f"outside the server's folder {root}" in await error_of(client, "advise", {"report": str(outside)})
    assert "outside the server's folder" in await error_of(client, "advise", {"report": "../x.ncu-rep"})
    assert "no such file" in await error_of(client, "advise", {"report": "sg/missing.ncu-rep"})
    assert "unknown skill" in await error_of(client, "skills_show", {"skill": "mem.nonsense"})
    assert "did you mean" in await error_of(client, "rules_explain", {"rule": "mem.smem_tiling.cache-reus"})
    assert "give the candidate once" in await error_of(client, "submit_candidate", {
        "run": "run_1", "candidate_path": "sg/naive_sgemm.cu", "candidate_source": "x"})
    assert "no run run_99" in await error_of(client, "submit_candidate", {"run": "run_99", "candidate_source": "x"})
    assert "unknown tool" in await error_of(client, "optimise", {})
    # still serving
    assert (await call(client, "skills_show", {"skill": "mem.vectorize"}))["id"] == "mem.vectorize"


async def test_a_candidate_for_a_run_that_is_not_waiting_is_refused(client):
    # A kernel with no profile and nothing for the rules to read: the run finishes at once.
    got = await call(client, "optimize_start", {"kernel": "sg/naive_sgemm.cu", "no_gpu": True, "rounds": 1})
    run = got["run"]
    if got["summary"]["status"] == "paused":       # the rules proposed something from the source alone
        await call(client, "submit_candidate", {"run": run, "candidate_path": "sg/naive_sgemm.cu"})
    text = await error_of(client, "submit_candidate", {"run": run, "candidate_source": "__global__ void k() {}"})
    assert "finished" in text or "not waiting" in text, text
    assert (await call(client, "pending", {}))["pending"][0]["run"] == "run_1"   # run_1 is untouched


async def test_root_and_allowed_folders(root):
    """`--root` is where relative paths start; `--allow-path` adds a folder; everything else is refused."""
    shutil.copy(EXAMPLE / "naive_sgemm.h200.ncu-rep.xz", root / "outside" / "copy.ncu-rep.xz")
    params = StdioServerParameters(command=sys.executable, cwd=str(root.parent), args=[
        "-m", "skillbase", "mcp", "--root", str(root / "sg"), "--allow-path", str(root / "outside"),
        "--store", str(root / "store")])
    async with Client(params, read_timeout_seconds=300) as other:
        in_root = await call(other, "evidence", {"report": "naive_sgemm.h200.ncu-rep.xz"})
        assert in_root["focus_kernel"] == "sgemm_naive"
        allowed = await call(other, "evidence", {"report": str(root / "outside" / "copy.ncu-rep.xz")})
        assert allowed["focus_kernel"] == "sgemm_naive"
        assert "outside the server's folder" in await error_of(other, "evidence", {"report": "../outside/../x.cu"})


async def test_a_waiting_run_is_stopped_by_hand_and_leaves_pending(client):
    started = await call(client, "optimize_start", {"kernel": "sg/naive_sgemm.cu", "no_gpu": True, "rounds": 2,
                                                    "saved_report": "sg/naive_sgemm.h200.ncu-rep.xz"})
    assert started["summary"]["status"] == "paused"
    run = started["run"]
    reason = f"not wanted any more ({random.randrange(10**6)})"
    got = await call(client, "stop_run", {"run": run, "reason": reason})
    assert got["status"] == "finished" and got["stop_reason"] == f"stopped by hand: {reason}"
    assert run not in {p["run"] for p in (await call(client, "pending", {}))["pending"]}
    assert "only a paused or interrupted run can be stopped" in await error_of(client, "stop_run",
                                                                               {"run": run, "reason": "again"})
    assert "a stop needs a reason" in await error_of(client, "stop_run", {"run": "run_1", "reason": "  "})
