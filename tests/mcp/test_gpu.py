"""`skillbase mcp` on the H200: check, profile and submit_candidate do real GPU work through the tools."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'skillbase[mcp]')")

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.gpu, pytest.mark.anyio]


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def root(tmp_path) -> Path:
    for name in ("vector_add", "naive_sgemm"):
        shutil.copytree(REPO / "examples" / name, tmp_path / name)
    return tmp_path


async def call(client, tool: str, arguments: dict) -> dict:
    progress = []

    async def on_progress(done, total, message):
        progress.append(message)

    result = await client.call_tool(tool, arguments, progress_callback=on_progress)
    assert not result.is_error, result.content[0].text
    return {**result.structured_content, "_progress": progress}


async def test_gpu_tools(root):
    params = mcp.StdioServerParameters(command=sys.executable, args=["-m", "skillbase", "mcp", "--store", "store"],
                                       # The SDK passes only a safe subset of the environment; the GPU machine
                                       # finds skillbase through PYTHONPATH, so hand the whole environment on.
                                       cwd=str(root), env=dict(os.environ))
    async with mcp.Client(params, read_timeout_seconds=600) as client:
        checked = await call(client, "check", {"kernel": "vector_add/vector_add.cu"})
        assert checked["status"] == "ok" and checked["_progress"], checked.get("reason")
        profiled = await call(client, "profile", {"kernel": "vector_add/vector_add.cu", "out": "profile"})
        assert Path(profiled["report"]).parent == root / "profile"
        started = await call(client, "optimize_start", {"kernel": "naive_sgemm/naive_sgemm.cu", "rounds": 1})
        assert started["pending"]["kind"] == "coder", started["summary"]
        judged = await call(client, "submit_candidate", {"run": started["run"],
                                                         "candidate_path": "naive_sgemm/naive_sgemm.cu"})
        assert judged["verdict"]["status"] == "slower" and judged["verdict"]["runtime_us"] > 0, judged["verdict"]
