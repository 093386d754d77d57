"""`skillbase mcp --http`: streamable HTTP on 127.0.0.1 and a free port, the same tools as over stdio."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "skillbase", "mcp", "--http", "--port", str(port),
                                "--store", str(tmp_path / "store")], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    else:
        process.kill()
        pytest.fail(f"the server did not listen on port {port}: {process.stderr.read()}")
    yield port, process
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


def listening_addresses(pid: int, port: int) -> set[str]:
    """The local addresses the process listens on at `port` (from /proc/net/tcp, IPv4)."""
    inodes = {os.readlink(f"/proc/{pid}/fd/{fd}")[len("socket:["):-1] for fd in os.listdir(f"/proc/{pid}/fd")
              if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:[")}
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        address, state, inode = fields[1], fields[3], fields[9]
        host, hex_port = address.split(":")
        if state == "0A" and int(hex_port, 16) == port and inode in inodes:   # 0A: LISTEN
            found.add(socket.inet_ntoa(bytes.fromhex(host)[::-1]))
    return found


def test_http_serves_the_tools_on_localhost_only(server):
    port, process = server

    async def session() -> tuple[set[str], dict, bool]:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            card = await client.call_tool("skills_show", {"skill": "mem.coalesce"})
            bad = await client.call_tool("skills_show", {"skill": "mem.coalesce", "verbose": True})
            return names, card.structured_content, bad.is_error

    names, card, bad_is_error = anyio.run(session)
    assert {"advise", "optimize_start", "submit_candidate"} <= names
    assert card["id"] == "mem.coalesce"
    assert bad_is_error
    assert listening_addresses(process.pid, port) == {"127.0.0.1"}
