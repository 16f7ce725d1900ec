"""MCP tools as registry tools (`mcp__SERVER__TOOL`, the server's JSON schema) and their results as ToolResults."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any

from loopagent.details import Details
from loopagent.messages import ToolResult
from loopagent.tools.base import SchemaTool, ToolContext
from loopagent.tools.spec import ToolSpec

MAX_NAME = 64


class McpTool(SchemaTool):
    """A server's tool in the registry; `server` and `remote` name it as the server knows it."""

    def __init__(self, spec: ToolSpec, hub: Any, server: str, remote: str):
        super().__init__(spec, caller(hub, server, remote))
        self.server, self.remote = server, remote


def tool_name(server: str, tool: str, taken: set[str]) -> str:
    """`mcp__SERVER__TOOL` in the characters every server accepts, at most 64, a short hash when cut or taken."""
    full = f"mcp__{server}__{tool}"
    name = re.sub(r"[^A-Za-z0-9_-]", "_", full)
    if len(name) <= MAX_NAME and name not in taken:
        return name
    digest = hashlib.sha256(full.encode()).hexdigest()
    for size in (6, 10, 16, 64):
        candidate = f"{name[: MAX_NAME - size - 1]}_{digest[:size]}"
        if candidate not in taken:
            return candidate
    raise ValueError(f"no free name for MCP tool {tool!r} of {server!r}")


def offered(tool: str, enabled: list[str] | None, disabled: list[str]) -> bool:
    """Whether a server's tool joins the registry under the server's enabled_tools / disabled_tools globs."""
    if enabled is not None and not any(fnmatchcase(tool, g) for g in enabled):
        return False
    return not any(fnmatchcase(tool, g) for g in disabled)


def mcp_tools(hub: Any, taken: Iterable[str] = ()) -> tuple[list[McpTool], list[str]]:
    """The registry tools of every started server, and a warning for each tool that cannot be offered."""
    names, tools, warnings = set(taken), [], []
    for server in hub.servers.values():
        cfg = server.config
        for remote in server.tools:
            if not offered(remote.name, cfg.enabled_tools, cfg.disabled_tools):
                continue
            try:
                name = tool_name(server.name, remote.name, names)
                schema = dict(remote.inputSchema or {"type": "object"})
                # A server's own hints (readOnlyHint) are untrusted: its tools act outside the workspace, and
                # the policy asks unless a rule or mode `all` allows them.
                spec = ToolSpec(name, description_of(remote), schema, read_only=False, effect="external",
                                path_param=path_param_of(schema))
            except ValueError as exc:
                warnings.append(f"MCP server {server.name!r}: tool {remote.name!r} left out: {exc}")
                continue
            names.add(name)
            tools.append(McpTool(spec, hub, server.name, remote.name))
    return tools, warnings


def path_param_of(schema: dict[str, Any]) -> str | None:
    """`path` when the tool declares one: path rules (`mcp__fs__read(src/*)`) match it as a workspace path."""
    properties = schema.get("properties")
    return "path" if isinstance(properties, dict) and "path" in properties else None


def description_of(remote: Any) -> str:
    text = (remote.description or getattr(remote, "title", None) or "").strip()
    return text or f"The {remote.name} tool of an MCP server."


def caller(hub: Any, server: str, tool: str):
    """The run function of one MCP tool: the call on the hub, its answer mapped; never raises but ToolError."""
    from loopagent.mcp.client import CallFailed

    def run(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            answer = hub.call(server, tool, arguments, ctx.cancel)
        except CallFailed as exc:
            return ToolResult.error(str(exc), Details(exc.outcome))  # type: ignore[arg-type]
        return result_of(answer)

    return run


def result_of(answer: Any) -> ToolResult:
    """A CallToolResult as the model reads it: text as text, images as a note, isError as an error result."""
    parts = [part for block in answer.content or [] if (part := block_text(block))]
    text = "\n".join(parts)
    structured = getattr(answer, "structuredContent", None)
    if not any(getattr(b, "type", "") == "text" for b in answer.content or []) and structured is not None:
        text = "\n".join(filter(None, [text, json.dumps(structured, ensure_ascii=False)]))
    if answer.isError:
        return ToolResult.error(text or "the MCP tool failed and said nothing")
    return ToolResult.ok(text or "(no output)")


def block_text(block: Any) -> str:
    """One content block as text: images and audio as `[image MIME, N bytes]`, links as their URI."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        return f"[{kind} {block.mimeType}, {decoded_size(block.data)} bytes]"
    if kind == "resource_link":
        return str(block.uri)
    if kind == "resource":
        res = block.resource
        if getattr(res, "text", None) is not None:
            return res.text
        return f"[resource {res.uri}, {res.mimeType or 'binary'}, {decoded_size(getattr(res, 'blob', ''))} bytes]"
    return f"[{kind or 'unknown'} content]"


def decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data or "", validate=False))
    except (binascii.Error, ValueError):
        return len(data or "")
