"""An ACP client for the tests: the SDK's client side (`ClientSideConnection`) driving `loop acp`, in this
process (over a socket pair) or as a subprocess, recording what the agent sent and validating every message
the agent sends against the SDK's schema models."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import RequestError, schema
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent

from tests.conftest import clean_env

# What the agent may send, by method, and what answers the client's requests, by the request's method.
REQUESTS = {
    "session/update": schema.SessionNotification,
    "session/request_permission": schema.RequestPermissionRequest,
    "fs/read_text_file": schema.ReadTextFileRequest,
    "fs/write_text_file": schema.WriteTextFileRequest,
}
RESPONSES = {
    "initialize": schema.InitializeResponse,
    "session/new": schema.NewSessionResponse,
    "session/load": schema.LoadSessionResponse,
    "session/prompt": schema.PromptResponse,
    "session/set_mode": schema.SetSessionModeResponse,
}


class Validator:
    """A stream observer: each message from the agent checked against the schema; failures kept."""

    def __init__(self) -> None:
        self.asked: dict[Any, str] = {}  # the client's request ids -> method
        self.failures: list[str] = []
        self.count = 0

    def __call__(self, event: StreamEvent) -> None:
        message = event.message
        if event.direction == StreamDirection.OUTGOING:
            if "method" in message and "id" in message:
                self.asked[message["id"]] = message["method"]
            return
        self.count += 1
        try:
            assert message.get("jsonrpc") == "2.0", "not JSON-RPC 2.0"
            if "method" in message:
                REQUESTS[message["method"]].model_validate(message.get("params"))
            elif "error" in message:
                error = message["error"]
                assert isinstance(error.get("code"), int) and isinstance(error.get("message"), str), error
            else:
                model = RESPONSES.get(self.asked.get(message.get("id"), ""))
                if model is not None:
                    model.model_validate(message.get("result") or {})
        except Exception as exc:
            self.failures.append(f"{message}: {exc}")


class Client:
    """The editor: records updates, answers permission requests from `answers` (option ids, in order; a
    callable gets the request), serves `buffers` (absolute path -> text) for fs/read_text_file."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.permissions: list[schema.RequestPermissionRequest] = []
        self.answers: list[str | Callable[[Any], Any]] = []
        self.buffers: dict[str, str] = {}
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.asked = asyncio.Event()  # set at each permission request (the test clears it)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, session_id: str, tool_call: Any, options: list, **kwargs: Any) -> Any:
        self.permissions.append(schema.RequestPermissionRequest(session_id=session_id, tool_call=tool_call,
                                                                options=options))
        self.asked.set()
        answer = self.answers.pop(0) if self.answers else "reject_once"
        if callable(answer):
            answer = await answer(tool_call)
        if answer == "cancelled":
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        return schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected", option_id=answer))

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> schema.ReadTextFileResponse:
        self.reads.append(path)
        if path not in self.buffers:
            raise RequestError.resource_not_found(path)
        return schema.ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> None:
        self.writes.append((path, content))
        self.buffers[path] = content

    def kinds(self) -> list[str]:
        return [u.session_update for u in self.updates]

    def text(self) -> str:
        return "".join(u.content.text for u in self.updates if u.session_update == "agent_message_chunk")

    def calls(self) -> list[Any]:
        return [u for u in self.updates if u.session_update == "tool_call"]

    def progress(self, call_id: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == "tool_call_update" and u.tool_call_id == call_id]


async def until(condition: Callable[[], Any], timeout: float = 20) -> None:
    """Poll `condition` on the event loop until it holds; fail at `timeout`."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


FS = schema.ClientCapabilities(fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True))


@asynccontextmanager
async def in_process(defaults: Any) -> AsyncIterator[tuple[ClientSideConnection, Client, Validator]]:
    """`loop acp`'s agent in this process, on one end of a socket pair; the SDK's client on the other."""
    from loopagent.acp.agent import LoopAgent
    from loopagent.acp.serve import serve_streams

    ours, theirs = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=theirs, limit=50 * 1024 * 1024)
    agent = LoopAgent(defaults)
    task = asyncio.create_task(serve_streams(agent, agent_reader, agent_writer))
    client, validator = Client(), Validator()
    reader, writer = await asyncio.open_connection(sock=ours, limit=50 * 1024 * 1024)
    conn = ClientSideConnection(client, writer, reader, observers=[validator])
    try:
        yield conn, client, validator
    finally:
        await conn.close()
        writer.close()
        await asyncio.wait_for(task, 20)
        assert not validator.failures, validator.failures


@asynccontextmanager
async def subprocess_agent(home: Path, *args: str) -> AsyncIterator[tuple[ClientSideConnection, Client, Validator,
                                                                           Any]]:
    """The real `loop acp` entry point in a subprocess, stdio piped; its exit status is the process's
    `returncode` afterwards. Every line it writes on stdout is checked to be JSON before the SDK reads it
    (the SDK would skip a stray line)."""
    import json
    import sys

    client, validator = Client(), Validator()
    home.mkdir(parents=True, exist_ok=True)
    with (home / "acp-stderr.txt").open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "loopagent", "acp", *args, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=stderr, env=clean_env(home), limit=50 * 1024 * 1024)
        reader = asyncio.StreamReader(limit=50 * 1024 * 1024)

        async def tee() -> None:
            while line := await process.stdout.readline():
                try:
                    json.loads(line)
                except ValueError:
                    validator.failures.append(f"not a protocol line on stdout: {line[:200]!r}")
                reader.feed_data(line)
            reader.feed_eof()

        teeing = asyncio.create_task(tee())
        conn = ClientSideConnection(client, process.stdin, reader, observers=[validator])
        try:
            yield conn, client, validator, process
        finally:
            await conn.close()
            process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), 20)
            finally:
                if process.returncode is None:
                    process.kill()
                    await process.wait()
            await asyncio.wait_for(teeing, 5)
    assert not validator.failures, validator.failures
