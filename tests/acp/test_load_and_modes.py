"""session/load replays a saved session and continues it; modes switch with session/set_mode (a project
file still only tightens); a prompt's resource blocks and the commands an editor is offered."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from acp import RequestError, schema

from loopagent.acp.agent import Defaults
from loopagent.run.spec import Flags
from tests.acp.harness import in_process, until
from tests.conftest import where_shells_run
from tests.fakeserver import FakeServer, text, tools, user_texts


def defaults(server: FakeServer, **flags) -> Defaults:
    sandbox = "off" if where_shells_run() else None
    return Defaults(Flags(base_url=server.url, ctx_size=16384, sandbox=sandbox, **flags))


def words(text_: str) -> list:
    return [schema.TextContentBlock(type="text", text=text_)]


def test_load_replays_the_session_then_continues_it(server: FakeServer, workspace: Path) -> None:
    # both replies number their call "call_0_read_file", as servers that count per reply do
    server.add(tools(("read_file", {"path": "nope.txt"})), tools(("read_file", {"path": "a.txt"})),
               text("It says hello."), text("Still hello."))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, _, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=words("what does a.txt say?"))
        async with in_process(defaults(server)) as (conn, client, _):
            await conn.initialize(protocol_version=1)
            loaded = await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            assert loaded.modes.current_mode_id == "edits"
            replayed = [u for u in client.updates if u.session_update != "available_commands_update"]
            kinds = [u.session_update for u in replayed]
            assert kinds == ["user_message_chunk", "tool_call", "tool_call", "agent_message_chunk"]
            assert replayed[0].content.text == "what does a.txt say?"
            missing, call = replayed[1:3]
            assert (missing.title, missing.status) == ("Read nope.txt", "failed")
            assert (call.title, call.kind, call.status) == ("Read a.txt", "read", "completed")
            assert missing.tool_call_id != call.tool_call_id
            assert "hello" in call.content[0].content.text
            assert replayed[3].content.text == "It says hello."
            answer = await conn.prompt(session_id=sid, prompt=words("and now?"))
            assert answer.stop_reason == "end_turn"
            assert user_texts(server.requests[-1])[-2:] == ["what does a.txt say?", "and now?"]

    asyncio.run(asyncio.wait_for(main(), 60))


def test_load_of_an_unknown_session_is_an_error(server: FakeServer, workspace: Path) -> None:
    async def main() -> None:
        async with in_process(defaults(server)) as (conn, _, _):
            await conn.initialize(protocol_version=1)
            with pytest.raises(RequestError) as caught:
                await conn.load_session(cwd=str(workspace), session_id="20990101T000000Z-nothing", mcp_servers=[])
            assert caught.value.code == -32602

    asyncio.run(asyncio.wait_for(main(), 60))


def test_set_mode_switches_and_an_unknown_mode_is_invalid_params(server: FakeServer, workspace: Path) -> None:
    server.add(tools(("write_file", {"path": "new.txt", "content": "x\n"})), text("ok"))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await conn.set_session_mode(session_id=sid, mode_id="ask")
            assert [u.current_mode_id for u in client.updates if u.session_update == "current_mode_update"] == ["ask"]
            with pytest.raises(RequestError) as caught:
                await conn.set_session_mode(session_id=sid, mode_id="yolo")
            assert caught.value.code == -32602
            client.answers = ["allow_once"]
            await conn.prompt(session_id=sid, prompt=words("write"))
            (asked,) = client.permissions  # mode ask: an edit is asked, with its diff
            diff = [c for c in asked.tool_call.content if c.type == "diff"]
            assert diff and diff[0].new_text == "x\n" and diff[0].old_text is None
            assert (workspace / "new.txt").read_text() == "x\n"

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_project_file_still_only_tightens(server: FakeServer, workspace: Path) -> None:
    (workspace / ".loop").mkdir()
    (workspace / ".loop" / "config.json").write_text(json.dumps({"approval": "ask"}))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, _, _):
            await conn.initialize(protocol_version=1)
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            assert new.modes.current_mode_id == "ask"
            with pytest.raises(RequestError) as caught:
                await conn.set_session_mode(session_id=new.session_id, mode_id="all")
            assert "project file" in json.dumps(caught.value.data)

    asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.parametrize("sandbox", [None, "off"])
def test_plan_is_a_mode_in_which_nothing_changes(server: FakeServer, workspace: Path, sandbox: str | None) -> None:
    """Plan mode as an editor's mode: offered with what it means; a write refused, a shell write failing (the
    workspace read-only in the sandbox; without it, a command not shown read-only is refused); reads run. The
    model is told of each switch with the next message, as /plan tells it; a replay shows the words typed."""
    if sandbox is None and where_shells_run():
        pytest.skip("plan mode's read-only workspace needs bubblewrap")
    server.add(tools(("write_file", {"path": "planned.txt", "content": "x\n"}),
                     ("shell", {"command": "echo x > planned.txt"}), ("read_file", {"path": "a.txt"})), text("ok"),
               tools(("write_file", {"path": "planned.txt", "content": "x\n"})), text("done"))

    async def main() -> None:
        async with in_process(Defaults(Flags(base_url=server.url, ctx_size=16384, sandbox=sandbox))) \
                as (conn, client, _):
            await conn.initialize(protocol_version=1)
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            (plan,) = [m for m in new.modes.available_modes if m.id == "plan"]
            assert "nothing is changed" in plan.description
            await conn.set_session_mode(session_id=new.session_id, mode_id="plan")
            client.answers = ["allow_once"] * 3
            await conn.prompt(session_id=new.session_id, prompt=words("write"))
            assert not (workspace / "planned.txt").exists()
            write, shell, read = (client.progress(c.tool_call_id)[-1] for c in client.calls())
            assert write.status == "failed" and "plan mode" in write.content[0].content.text
            why = "Read-only file system" if sandbox is None else "plan mode without the sandbox"
            assert shell.status == "failed" and why in shell.content[0].content.text
            assert read.status == "completed" and "hello" in read.content[0].content.text
            assert client.permissions == []  # nothing in plan mode needed the person
            assert user_texts(server.requests[0])[-1].startswith("[plan mode is on: nothing may change")
            await conn.set_session_mode(session_id=new.session_id, mode_id="edits")
            await conn.prompt(session_id=new.session_id, prompt=words("do it"))
            assert (workspace / "planned.txt").read_text() == "x\n"  # the plan carried out
            told = user_texts(server.requests[2])[-1]
            assert told.startswith("[plan mode is off (approval edits): you may now") and told.endswith("do it")
        async with in_process(Defaults(Flags(base_url=server.url, ctx_size=16384, sandbox=sandbox))) \
                as (conn, client, _):  # reopened: the person's words only
            await conn.initialize(protocol_version=1)
            await conn.load_session(cwd=str(workspace), session_id=new.session_id, mcp_servers=[])
            said = [u.content.text for u in client.updates if u.session_update == "user_message_chunk"]
            assert said == ["write", "do it"]

    asyncio.run(asyncio.wait_for(main(), 60))


def test_the_todo_list_is_sent_as_a_plan(server: FakeServer, workspace: Path) -> None:
    todos = [{"content": "read the code", "status": "in_progress"}, {"content": "fix it", "status": "pending"}]
    server.add(tools(("todo_write", {"todos": todos})), text("ok"))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=words("plan it"))
            (call,) = client.calls()
            assert (call.title, call.kind) == ("Update the todo list", "think")
            (plan,) = [u for u in client.updates if u.session_update == "plan"]
            assert [(e.content, e.status) for e in plan.entries] == [(t["content"], t["status"]) for t in todos]
        async with in_process(defaults(server)) as (conn, client, _):  # reopened: the list is shown again
            await conn.initialize(protocol_version=1)
            await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            (plan,) = [u for u in client.updates if u.session_update == "plan"]
            assert [e.content for e in plan.entries] == ["read the code", "fix it"]

    asyncio.run(asyncio.wait_for(main(), 60))


def test_resource_blocks_and_templates(server: FakeServer, workspace: Path, loop_home: Path) -> None:
    (loop_home / "prompts").mkdir(parents=True)
    (loop_home / "prompts" / "explain.md").write_text("---\ndescription: explain a file\n---\nExplain $1 simply.")
    server.add(text("one"), text("two"))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await until(lambda: "available_commands_update" in client.kinds())
            (offered,) = [u for u in client.updates if u.session_update == "available_commands_update"]
            names = {c.name: c.description for c in offered.available_commands}
            assert "undo" in names and names["explain"].startswith("explain a file")
            await conn.prompt(session_id=sid, prompt=[
                schema.TextContentBlock(type="text", text="look at"),
                schema.ResourceContentBlock(type="resource_link", name="a.txt", uri=f"file://{workspace}/a.txt"),
                schema.EmbeddedResourceContentBlock(type="resource", resource=schema.TextResourceContents(
                    uri=f"file://{workspace}/b.py", text="print('embedded')"))])
            sent = user_texts(server.requests[0])[-1]
            assert sent.startswith("look at @a.txt")
            assert "[attached @a.txt" in sent and "hello" in sent  # attached as the REPL attaches a mention
            assert "print('embedded')" in sent and "b.py" in sent
            await conn.prompt(session_id=sid, prompt=words("/explain a.txt"))
            assert user_texts(server.requests[1])[-1] == "Explain a.txt simply."
            answer = await conn.prompt(session_id=sid, prompt=words("/checkpoints"))
            assert answer.stop_reason == "end_turn" and len(server.requests) == 2  # never sent to the model

    asyncio.run(asyncio.wait_for(main(), 60))


def test_undo_from_the_editor_restores_the_checkpoint(server: FakeServer, workspace: Path) -> None:
    server.add(tools(("write_file", {"path": "a.txt", "content": "changed\n"})), text("ok"))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=words("change it"))
            assert (workspace / "a.txt").read_text() == "changed\n"
            answer = await conn.prompt(session_id=sid, prompt=words("/undo"))
            assert answer.stop_reason == "end_turn"
            assert (workspace / "a.txt").read_text() == "hello\n"
            assert "undone" in client.text()
            assert len(server.requests) == 2  # the command never reached the model

    asyncio.run(asyncio.wait_for(main(), 60))
