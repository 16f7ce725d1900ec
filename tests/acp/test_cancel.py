"""session/cancel ends the turn at any moment, as Ctrl+C does: while the model streams, while a command
runs (its process is gone afterwards), while a permission request is pending; stop reason `cancelled`."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from acp import schema

from loopagent.acp.agent import Defaults
from loopagent.run.spec import Flags
from tests.acp.harness import in_process, until
from tests.conftest import where_shells_run
from tests.fakeserver import FakeServer, Reply, text, text_events, tools


def defaults(server: FakeServer, approval: str = "edits") -> Defaults:
    sandbox = "off" if where_shells_run() else None
    return Defaults(Flags(base_url=server.url, ctx_size=16384, sandbox=sandbox, approval=approval))


def running(marker: str) -> list[int]:
    """Processes whose command line holds `marker`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


async def cancelled_turn(conn, client, sid: str, ready) -> float:
    """Prompt, wait for `ready()`, cancel; the seconds from the cancel to the response (asserted cancelled)."""
    turn = asyncio.create_task(conn.prompt(session_id=sid, prompt=[schema.TextContentBlock(type="text", text="go")]))
    await until(lambda: ready() or turn.done())
    assert not turn.done()
    start = time.monotonic()
    await conn.cancel(session_id=sid)
    answer = await asyncio.wait_for(turn, 10)
    assert answer.stop_reason == "cancelled"
    return time.monotonic() - start


def test_cancel_while_the_model_streams(server: FakeServer, workspace: Path) -> None:
    server.add(Reply(events=text_events("word " * 400), split=40, delay=0.05), text("after"))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            took = await cancelled_turn(conn, client, sid, lambda: "agent_message_chunk" in client.kinds())
            assert took < 2
            assert client.text().startswith("word") and len(client.text()) < len("word " * 400)
            # the session goes on: the next prompt is answered
            answer = await conn.prompt(session_id=sid, prompt=[schema.TextContentBlock(type="text", text="again")])
            assert answer.stop_reason == "end_turn" and client.text().endswith("after")

    asyncio.run(asyncio.wait_for(main(), 60))


def test_cancel_while_a_command_runs_leaves_no_process(server: FakeServer, workspace: Path) -> None:
    marker = "sleep 29.7"
    server.add(tools(("shell", {"command": marker})), text("never"))

    async def main() -> None:
        async with in_process(defaults(server, "all")) as (conn, client, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            took = await cancelled_turn(conn, client, sid, lambda: bool(running(marker)))
            assert took < 2
            (call,) = client.calls()
            final = client.progress(call.tool_call_id)[-1]
            assert final.status == "failed" and "cancelled" in final.content[0].content.text
            await until(lambda: not running(marker), 5)
            assert len(server.requests) == 1  # nothing of the turn ran after the cancel

    asyncio.run(asyncio.wait_for(main(), 60))


def test_cancel_while_a_permission_request_is_pending(server: FakeServer, workspace: Path) -> None:
    server.add(tools(("shell", {"command": "touch asked.txt"})), text("never"))
    never = asyncio.Event()

    async def wait_forever(tool_call):
        await never.wait()

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            client.answers = [wait_forever]
            took = await cancelled_turn(conn, client, sid, lambda: bool(client.permissions))
            assert took < 2
            (call,) = client.calls()
            assert client.progress(call.tool_call_id)[-1].status == "failed"
            assert not (workspace / "asked.txt").exists()
            never.set()

    asyncio.run(asyncio.wait_for(main(), 60))
