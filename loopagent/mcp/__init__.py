"""MCP servers' tools in loop's registry. The SDK is imported only by `client` and only when servers are configured.

`settings` checks the `mcp_servers` config value (pydantic only); `client` runs the servers on one
background thread; `tools` turns their tools into registry tools and their results into ToolResults.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def start_servers(servers: Mapping[str, Mapping[str, Any]], home: Path, env: Mapping[str, str], cwd: Path,
                  taken: Iterable[str] = ()) -> tuple[Any, list, list[str]]:
    """Start the configured servers in parallel: (the hub, their registry tools, warnings for stderr)."""
    hub = launch_servers(servers, home, env, cwd)
    return (hub, *server_tools(hub, taken))


def launch_servers(servers: Mapping[str, Mapping[str, Any]], home: Path, env: Mapping[str, str], cwd: Path) -> Any:
    """Spawn the configured servers in parallel and return their hub at once (see `server_tools`)."""
    from loopagent.mcp.client import Hub
    from loopagent.mcp.settings import ServerConfig

    hub = Hub({name: ServerConfig.model_validate(cfg) for name, cfg in servers.items()}, home, env, cwd)
    hub.launch()
    return hub


def server_tools(hub: Any, taken: Iterable[str] = ()) -> tuple[list, list[str]]:
    """Once the launched servers are up (or past their startup_timeout): their tools and warnings for stderr."""
    from loopagent.mcp.tools import mcp_tools

    warnings = hub.wait()
    tools, more = mcp_tools(hub, taken)
    return tools, warnings + more
