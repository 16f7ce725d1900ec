"""`loop mcp list`: each configured MCP server, whether it started (and why not), and its tools."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from loopagent.cli.config_cmd import Workspace, load, root_of, say

mcp_app = typer.Typer(help="MCP servers (declared in the user file or with --mcp-config).", no_args_is_help=True,
                      rich_markup_mode=None)

McpConfig = Annotated[Path | None, typer.Option(
    "--mcp-config", metavar="FILE", help='MCP servers from FILE ({"mcp_servers": {...}}) instead of the user file\'s.')]


@mcp_app.command("list")
def list_servers(workspace: Workspace = None, mcp_config: McpConfig = None) -> None:
    """Start each configured server, show whether it started and its tools (first line of each description).

    Exit 0 when every server started, 1 when one did not.
    """
    from loopagent.cli.refusal import mcp_servers_of
    from loopagent.config import loop_home

    flags = {"mcp_servers": mcp_servers_of(mcp_config, False)} if mcp_config is not None else {}
    root = root_of(workspace)
    servers = load(root, flags).settings.mcp_servers
    if not servers:
        say("no MCP servers configured (add \"mcp_servers\" to the user file, or give --mcp-config FILE)")
        raise typer.Exit(0)
    from loopagent.mcp import start_servers

    env = dict(os.environ)
    hub, tools, _warnings = start_servers(servers, loop_home(env), env, root)
    try:
        raise typer.Exit(show(hub, tools))
    finally:
        hub.close()


def show(hub, tools) -> int:
    """Print the servers and their tools; the exit code (1 when a server did not start)."""
    code = 0
    for server in hub.servers.values():
        if not server.started:
            say(f"{server.name}: not started: {server.error}")
            code = 1
            continue
        mine = [t for t in tools if t.server == server.name]
        say(f"{server.name}: started, {len(mine)} tool{'s' if len(mine) != 1 else ''}")
        width = max((len(t.spec().name) for t in mine), default=0)
        for tool in mine:
            first = (tool.spec().description.strip().splitlines() or [""])[0]
            say(f"  {tool.spec().name:<{width}}  {first}".rstrip())
    return code


def register(app: typer.Typer) -> None:
    """Add `mcp list` to the `loop` app."""
    app.add_typer(mcp_app, name="mcp")
