"""`skillbase mcp`: the Python API served over the Model Context Protocol (docs/mcp.md).

The server (`skillbase.mcp.server`) needs the official `mcp` SDK, the optional extra `mcp`; this
module says so in one line when it is missing, before anything imports it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from skillbase.errors import EnvironmentProblem, InputError

EXTRA = "mcp"
INSTALL = "pip install 'skillbase[mcp]'"


def require_extra() -> None:
    if importlib.util.find_spec("mcp") is None:
        raise EnvironmentProblem(f"`skillbase mcp` needs the optional extra '{EXTRA}' (the MCP Python SDK)", INSTALL)


def serve(root: Path, allowed: tuple[Path, ...] = (), store: Path | None = None, transport: str = "stdio",
          host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve skillbase's tools for `root` (paths outside it, `allowed` and the store are refused)."""
    require_extra()
    from skillbase.mcp.server import ServerConfig
    from skillbase.mcp.server import serve as run

    for folder in allowed:
        if not folder.is_dir():
            raise InputError(f"--allow-path {folder}: no such folder", "give an existing folder")
    config = ServerConfig(root=root.resolve(), allowed=tuple(f.resolve() for f in allowed), store=store)
    run(config, transport=transport, host=host, port=port)
