"""`skillbase mcp`: serve skillbase's tools to coding agents over the Model Context Protocol (docs/mcp.md)."""

from __future__ import annotations

from pathlib import Path

import click

from skillbase.commands.options import store_option


@click.command("mcp")
@click.option("--http", "http", is_flag=True, help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="With --http: the address to bind.")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True, help="With --http: the port.")
@click.option("--root", type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("."),
              help="The folder relative paths resolve against and tools may use (default: the current folder).")
@click.option("--allow-path", "allowed", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="Also allow paths under this folder (besides --root and the run store); repeatable.")
@store_option
def mcp(http, host, port, root, allowed, store_path):
    """Serve skillbase's tools (advise, check, optimize_start, submit_candidate, ...) to an MCP client."""
    from skillbase.mcp import serve

    serve(root, tuple(allowed), Path(store_path) if store_path else None,
          transport="streamable-http" if http else "stdio", host=host, port=port)
