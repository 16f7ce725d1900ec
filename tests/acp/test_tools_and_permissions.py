"""A tool turn through the SDK's client: what the editor is shown of each call, and permissions the loop
way (loop's policy first, only its `ask` reaches the client, the four options)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from acp import schema

from loopagent.acp.agent import Defaults
from loopagent.run.spec import Flags
from tests.acp.harness import FS, in_process
from tests.conftest import where_shells_run
from tests.fakeserver import FakeServer, text, tools


def defaults(server: FakeServer, **flags) -> Defaults:
    sandbox = "off" if where_shells_run() else None
    return Defaults(Flags(base_url=server.url, ctx_size=16384, sandbox=sandbox, **flags))


def prompt(words: str) -> list:
    return [schema.TextContentBlock(type="text", text=words)]


async def session(conn, workspace: Path, fs: bool = False) -> str:
    await conn.initialize(protocol_version=1, client_capabilities=FS if fs else None)
    return (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id


def test_read_and_edit_show_kind_title_locations_and_a_diff(server: FakeServer, workspace: Path) -> None:
    server.add(tools(("read_file", {"path": "a.txt"})),
               tools(("edit_file", {"path": "a.txt", "old_string": "hello", "new_string": "goodbye"})),
               text("Done."))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            sid = await session(conn, workspace)
            answer = await conn.prompt(session_id=sid, prompt=prompt("change the greeting"))
            assert answer.stop_reason == "end_turn"
            read, edit = client.calls()
            assert (read.kind, read.title, read.raw_input) == ("read", "Read a.txt", {"path": "a.txt"})
            assert [loc.path for loc in read.locations] == [str(workspace / "a.txt")]
            assert edit.kind == "edit" and edit.title == "Edit a.txt"
            assert [u.status for u in client.progress(read.tool_call_id)] == ["in_progress", "completed"]
            done = client.progress(edit.tool_call_id)[-1]
            assert done.status == "completed"
            diff = [c for c in done.content if c.type == "diff"]
            assert len(diff) == 1
            assert (diff[0].path, diff[0].old_text, diff[0].new_text) == (
                str(workspace / "a.txt"), "hello\n", "goodbye\n")
            assert client.permissions == []  # mode edits: edits run without asking
            assert (workspace / "a.txt").read_text() == "goodbye\n"

    asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
def test_a_shell_call_in_mode_edits_asks_the_client(server: FakeServer, workspace: Path, answer: str) -> None:
    command = "echo made > made.txt"
    server.add(tools(("shell", {"command": command})), text("ok"))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            sid = await session(conn, workspace)
            client.answers = [answer]
            await conn.prompt(session_id=sid, prompt=prompt("make a file"))
            (asked,) = client.permissions
            assert asked.tool_call.title == command
            assert asked.tool_call.kind == "execute"
            assert command in asked.tool_call.content[0].content.text
            assert [o.kind for o in asked.options] == ["allow_once", "allow_always", "reject_once", "reject_always"]
            (call,) = client.calls()
            assert asked.tool_call.tool_call_id == call.tool_call_id  # the question is about the call shown
            final = client.progress(call.tool_call_id)[-1]
            if answer == "allow_once":
                assert final.status == "completed"
                assert (workspace / "made.txt").read_text() == "made\n"
            else:
                assert final.status == "failed"
                assert "did not approve" in final.content[0].content.text
                assert not (workspace / "made.txt").exists()

    asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.parametrize("always", ["allow_always", "reject_always"])
def test_always_is_not_asked_again_and_a_denied_call_never_reaches_the_client(
        server: FakeServer, workspace: Path, always: str) -> None:
    command = "echo x >> log.txt"
    server.add(tools(("shell", {"command": command})), tools(("shell", {"command": command})),
               tools(("shell", {"command": "sudo rm -rf /tmp/canary"})), text("ok"))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            sid = await session(conn, workspace)
            client.answers = [always]
            await conn.prompt(session_id=sid, prompt=prompt("twice"))
            assert len(client.permissions) == 1  # the second identical call was not asked
            first, second, denied = client.calls()
            if always == "allow_always":
                assert (workspace / "log.txt").read_text() == "x\nx\n"
            else:
                assert not (workspace / "log.txt").exists()
                assert client.progress(second.tool_call_id)[-1].status == "failed"
            assert denied.title == "sudo rm -rf /tmp/canary"
            final = client.progress(denied.tool_call_id)[-1]
            assert final.status == "failed" and "denied by policy" in final.content[0].content.text

    asyncio.run(asyncio.wait_for(main(), 60))


def test_an_unsaved_buffer_is_what_read_file_sees_and_writes_go_through_the_client(
        server: FakeServer, workspace: Path) -> None:
    server.add(tools(("read_file", {"path": "a.txt"})),
               tools(("edit_file", {"path": "a.txt", "old_string": "unsaved", "new_string": "edited"})),
               tools(("read_file", {"path": "../outside.txt"})), tools(("read_file", {"path": "link.txt"})),
               tools(("write_file", {"path": "link.txt", "content": "pwned"})), text("ok"))
    (workspace.parent / "outside.txt").write_text("secret\n")
    (workspace / "link.txt").symlink_to(workspace.parent / "outside.txt")

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            sid = await session(conn, workspace, fs=True)
            path = str(workspace / "a.txt")
            client.buffers[path] = "unsaved text\n"
            await conn.prompt(session_id=sid, prompt=prompt("read it"))
            assert path in client.reads
            sent = json.dumps(server.requests[1]["messages"])
            assert "unsaved text" in sent  # the model saw the buffer, not the disk's "hello"
            assert client.writes == [(path, "edited text\n")]
            assert (workspace / "a.txt").read_text() == "hello\n"  # writes went only through the client
            for escape in client.calls()[-3:]:  # ../outside.txt, and a link to it read and written
                assert client.progress(escape.tool_call_id)[-1].status == "failed"
            # confinement comes first: the client is never asked about a path outside the workspace
            assert all("outside" not in p and "link" not in p for p in client.reads)
            assert [p for p, _ in client.writes] == [path]
            assert (workspace.parent / "outside.txt").read_text() == "secret\n"

    asyncio.run(asyncio.wait_for(main(), 60))
