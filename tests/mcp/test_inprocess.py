"""The server's error boundary, in process (the SDK's client connected to the server object): a tool
that fails with a bug is reported as that tool's internal error and the server keeps serving."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mcp import Client

from skillbase.errors import InputError
from skillbase.mcp import server

pytestmark = pytest.mark.anyio
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "naive_sgemm"


@pytest.fixture
def anyio_backend():
    return "asyncio"


def broken(config, args, progress):
    progress("about to fail")
    raise RuntimeError("a bug")


async def test_a_bug_in_a_tool_is_its_internal_error_and_the_server_keeps_serving(tmp_path, monkeypatch):
    monkeypatch.setitem(server.TOOLS, "broken", server.ToolSpec("broken", "Always fails.", {}, broken))
    config = server.ServerConfig(root=tmp_path, store=tmp_path / "store")
    async with Client(server.build_server(config)) as client:
        failed = await client.call_tool("broken", {})
        assert failed.is_error and failed.content[0].text == "internal error in broken: RuntimeError: a bug"
        card = await client.call_tool("skills_show", {"skill": "mem.coalesce"})
        assert not card.is_error and card.structured_content["id"] == "mem.coalesce"


def test_paths_resolve_against_the_root_and_stay_inside(tmp_path):
    (tmp_path / "k.cu").write_text("// a kernel\n")
    config = server.ServerConfig(root=tmp_path, store=tmp_path / "store")
    assert config.path("k.cu") == tmp_path / "k.cu"
    assert config.path(str(tmp_path / "store" / "runs"), exists=False) == tmp_path / "store" / "runs"
    (tmp_path / "link").symlink_to(Path("/etc"))
    for escape in ("../k.cu", "/etc/hostname", "link/hostname"):    # a symlink out is outside too
        with pytest.raises(InputError, match="outside the server's folder"):
            config.path(escape)


async def test_optimize_start_records_stop_at_floor_and_refuses_a_share_outside_0_to_1(tmp_path):
    from skillbase.run.store import RunStore

    shutil.copytree(EXAMPLE, tmp_path / "sg")
    config = server.ServerConfig(root=tmp_path, store=tmp_path / "store")
    start = {"kernel": "sg/naive_sgemm.cu", "no_gpu": True, "rounds": 1,
             "saved_report": "sg/naive_sgemm.h200.ncu-rep.xz"}
    async with Client(server.build_server(config)) as client:
        given = await client.call_tool("optimize_start", {**start, "stop_at_floor": 0.5})
        default = await client.call_tool("optimize_start", start)
        refused = await client.call_tool("optimize_start", {**start, "stop_at_floor": 1.5})
    assert not given.is_error and not default.is_error, (given.content[0].text, default.content[0].text)
    # one line that names the tool's own argument: an MCP client cannot pass a command-line flag
    refused_text = refused.content[0].text
    assert refused.is_error and "is not a share of the roofline floor" in refused_text, refused_text
    assert refused_text.startswith("stop_at_floor 1.5 ") and "--" not in refused_text and "\n" not in refused_text
    store = RunStore.open(tmp_path / "store", read_only=True)
    try:   # the manifest's settings are what the run's loop and `resume` decide with
        assert [store.get_run(got.structured_content["run"]).manifest["settings"]["stop_at_floor"]
                for got in (given, default)] == [0.5, 0.75]
        assert len(store.list_runs()) == 2                       # the refused share started no run
    finally:
        store.close()
