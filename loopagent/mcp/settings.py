"""The `mcp_servers` setting: one stdio server per name, checked when the config loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

STARTUP_TIMEOUT = 10.0
TOOL_TIMEOUT = 60.0


class ServerConfig(BaseModel):
    """How to start one MCP server over stdio, and how long to wait for it."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)  # added to a minimal environment
    startup_timeout: float = Field(STARTUP_TIMEOUT, gt=0)
    tool_timeout: float = Field(TOOL_TIMEOUT, gt=0)
    enabled_tools: list[str] | None = None  # globs; None: every tool
    disabled_tools: list[str] = Field(default_factory=list)


def check_servers(value: Any) -> dict[str, dict[str, Any]]:
    """The setting as plain JSON values (so `loop config` can print it); ValueError naming what is wrong."""
    if not isinstance(value, dict):
        raise ValueError('must be an object like {"NAME": {"command": "...", "args": []}}')
    out = {}
    for name, raw in value.items():
        if not isinstance(name, str) or not name.strip():
            raise ValueError("a server needs a non-empty name")
        try:
            out[name] = ServerConfig.model_validate(raw).model_dump()
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ValueError(f"server {name!r}: {where + ': ' if where else ''}{err['msg']}") from None
    return out


def read_servers(path: Path) -> dict[str, dict[str, Any]]:
    """The servers of an --mcp-config FILE: `{"mcp_servers": {...}}` (or `mcpServers`, as other agents
    write it); ValueError with one line naming the file when it cannot be used."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"--mcp-config {path}: cannot read it ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"--mcp-config {path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not any(k in data for k in ("mcp_servers", "mcpServers")):
        raise ValueError(f'--mcp-config {path}: must hold {{"mcp_servers": {{"NAME": {{"command": "..."}}}}}}')
    try:
        return check_servers(data.get("mcp_servers", data.get("mcpServers")))
    except ValueError as exc:
        raise ValueError(f"--mcp-config {path}: {exc}") from None
