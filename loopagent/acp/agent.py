"""The protocol's methods (the SDK's `Agent`): initialize, session/new, session/load, session/set_mode,
session/prompt and session/cancel, each answered from loop's sessions (acp/session.py)."""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, schema

from loopagent.acp import content
from loopagent.acp.session import Client, Session, host_for
from loopagent.run.spec import Flags, RunSpec

log = logging.getLogger("loop.acp")


@dataclass
class Defaults:
    """What `loop acp` was started with: the flags every session gets, the -C directory."""

    flags: Flags = field(default_factory=Flags)
    workspace: Path | None = None


def workspace_of(cwd: str) -> Path:
    """`cwd` of session/new or session/load: absolute and an existing directory, else invalid params."""
    if not cwd or not os.path.isabs(cwd):
        raise RequestError.invalid_params({"cwd": cwd, "details": "cwd must be an absolute path"})
    if not os.path.isdir(cwd):
        raise RequestError.invalid_params({"cwd": cwd, "details": "cwd is not an existing directory"})
    return Path(cwd)


def client_servers(servers: list[Any] | None) -> dict[str, dict[str, Any]]:
    """The client's stdio MCP servers in the user file's shape (others are not offered: http and sse false)."""
    found: dict[str, dict[str, Any]] = {}
    for server in servers or []:
        if not isinstance(server, schema.McpServerStdio):
            log.warning("MCP server %s ignored: only stdio servers are supported", getattr(server, "name", "?"))
            continue
        found[server.name] = {"command": server.command, "args": list(server.args),
                              "env": {v.name: v.value for v in server.env}}
    return found


class LoopAgent:
    """One connection's sessions."""

    def __init__(self, defaults: Defaults | None = None):
        self.defaults = defaults or Defaults()
        self.client = Client(conn=None)
        self.sessions: dict[str, Session] = {}

    def on_connect(self, conn: Any) -> None:
        self.client.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> schema.InitializeResponse:
        from loopagent import __version__

        fs = getattr(client_capabilities, "fs", None)
        self.client.read_files = bool(fs and fs.read_text_file)
        self.client.write_files = bool(fs and fs.write_text_file)
        return schema.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                prompt_capabilities=schema.PromptCapabilities(image=False, audio=False, embedded_context=True),
                mcp_capabilities=schema.McpCapabilities(http=False, sse=False)),
            auth_methods=[], agent_info=schema.Implementation(name="loop", title="loop", version=__version__))

    async def authenticate(self, method_id: str, **kwargs: Any) -> schema.AuthenticateResponse:
        return schema.AuthenticateResponse()

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
                          ) -> schema.NewSessionResponse:
        session = await self.open(workspace_of(cwd), mcp_servers, None)
        return schema.NewSessionResponse(session_id=session.id, modes=session.modes())

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           **kwargs: Any) -> schema.LoadSessionResponse:
        from loopagent.acp.feed import replay

        workspace = workspace_of(cwd)
        if (old := self.sessions.pop(session_id, None)) is not None:  # loaded again: the open run gives way
            await asyncio.to_thread(old.close)
        session = await self.open(workspace, mcp_servers, session_id)
        updates: list[Any] = []
        replay(session.run.rec.history, updates.append, str(workspace.resolve()))
        assert session.outbox is not None
        await session.outbox.send_all(updates)  # every update before the answer (DESIGN)
        return schema.LoadSessionResponse(modes=session.modes())

    async def open(self, workspace: Path, mcp_servers: list[Any] | None, resume: str | None) -> Session:
        from loopagent.errors import LoopError

        flags = self.defaults.flags
        session = Session(self.client, asyncio.get_running_loop())
        try:
            if extra := client_servers(mcp_servers):
                flags = replace_servers(flags, workspace, extra)
            spec = RunSpec(task=None, workspace=workspace, flags=flags, resume=resume)
            await asyncio.to_thread(session.open, spec, host_for(workspace))
        except Exception as exc:
            await asyncio.to_thread(session.stack.close)  # whatever of the run was opened ends here
            if isinstance(exc, (LoopError, ValueError)):  # a bad config or session: the client's to fix
                raise RequestError.invalid_params({"details": str(exc)}) from None
            raise
        session.start()
        self.sessions[session.id] = session
        # posted now, sent just after the answer that tells the client the session's id
        session.post(content.available(session.run.rec.home or workspace, workspace, session.skills()))
        return session

    async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> schema.SetSessionModeResponse:
        session = self.session(session_id)
        session.set_mode(mode_id)
        assert session.outbox is not None
        await session.outbox.flush()  # current_mode_update, then the answer
        return schema.SetSessionModeResponse()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> schema.PromptResponse:
        session = self.session(session_id)
        root = str(session.run.rec.workspace)
        text, attached = content.prompt_parts(prompt, root)
        if (asked := content.slash(text.strip())) is not None:
            name, args = asked
            if name in content.COMMANDS:
                return await self.say(session, await session.command(name, args))
            if (skill := content.skill_text(name, args, session.skills())) is not None:
                if not skill:
                    return await self.say(session, f"unknown skill {name[len(content.SKILL):]!r}; `loop skills` "
                                                   "lists the skills and what is wrong with any left out")
                text = skill
            elif (template := content.templates_of(session.run.rec.home or Path(root), Path(root)).get(name)):
                from loopagent.compose.templates import expand

                text = expand(template.text(), args)
        return schema.PromptResponse(stop_reason=await session.turn(text, attached))

    @staticmethod
    async def say(session: Session, answer: str) -> schema.PromptResponse:
        """A command's answer as the agent's message; the model is not asked."""
        session.post(schema.AgentMessageChunk(session_update="agent_message_chunk",
                                              content=schema.TextContentBlock(type="text", text=answer)))
        assert session.outbox is not None
        await session.outbox.flush()
        return schema.PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        if (session := self.sessions.get(session_id)) is not None:
            session.stop()

    def session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": session_id, "details": "no such session is open"})
        return session

    async def close(self) -> None:
        """The client went away: end every turn and close every run."""
        sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            await asyncio.to_thread(session.close)


def replace_servers(flags: Flags, workspace: Path, extra: dict[str, dict[str, Any]]) -> Flags:
    """`flags` with the client's MCP servers joined to the configured ones (the user file's or
    --mcp-config's, which win a name both use), all under the same policy."""
    from dataclasses import replace

    from loopagent.config import load_config
    from loopagent.mcp.settings import check_servers

    configured = flags.mcp_servers
    if configured is None:
        configured = load_config(workspace, flags.given()).settings.mcp_servers
    joined = {**check_servers(extra), **(configured or {})}
    return replace(flags, mcp_servers=joined)
