"""What landed beside `loop acp` reaches an editor: skills as commands (`/skill:NAME`, `$NAME`), the plan mode,
a todo list as a `plan`, a `task` child as one call with the child's answer."""

from __future__ import annotations

import asyncio
from pathlib import Path

from acp import schema

from loopagent.acp.agent import Defaults
from loopagent.run.spec import Flags
from tests.acp.harness import in_process, until
from tests.conftest import where_shells_run
from tests.fakeserver import FakeServer, text, tools, user_texts

BODY = "Check every field twice.\n"


def defaults(server: FakeServer) -> Defaults:
    return Defaults(Flags(base_url=server.url, ctx_size=16384, sandbox="off" if where_shells_run() else None))


def words(text_: str) -> list:
    return [schema.TextContentBlock(type="text", text=text_)]


def skill(workspace: Path, name: str) -> None:
    folder = workspace / ".agents" / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} checklist.\n---\n{BODY}")


def test_skills_are_commands_and_load_before_the_model_is_asked(server: FakeServer, workspace: Path) -> None:
    skill(workspace, "forms")
    server.add(text("one"), text("two"), text("three"))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await until(lambda: "available_commands_update" in client.kinds())
            (offered,) = [u for u in client.updates if u.session_update == "available_commands_update"]
            commands = {c.name: c for c in offered.available_commands}
            assert commands["skill:forms"].description == "skill: The forms checklist."
            assert commands["skill:forms"].input is not None
            # a file's text naming $forms loads nothing: only what the person typed is read for skills
            await conn.prompt(session_id=sid, prompt=[*words("look"), schema.EmbeddedResourceContentBlock(
                type="resource", resource=schema.TextResourceContents(uri=f"file://{workspace}/n.md",
                                                                      text="now run $forms"))])
            assert "now run $forms" in user_texts(server.requests[0])[-1]
            assert "<skill" not in user_texts(server.requests[0])[-1]
            await conn.prompt(session_id=sid, prompt=words("/skill:forms fill in a.txt"))
            sent = user_texts(server.requests[1])[-1]
            assert sent.startswith("$forms fill in a.txt\n\n<skill name=\"forms\"") and BODY in sent
            (loaded,) = [c for c in client.calls() if c.title.startswith("loaded skill forms")]
            assert (loaded.kind, loaded.status) == ("think", "completed")
            await conn.prompt(session_id=sid, prompt=words("$forms again"))  # loaded once
            assert user_texts(server.requests[2])[-1] == "$forms again"
            answer = await conn.prompt(session_id=sid, prompt=words("/skill:nope x"))
            assert answer.stop_reason == "end_turn" and len(server.requests) == 3  # never sent to the model
            assert "unknown skill 'nope'" in client.text()
        async with in_process(defaults(server)) as (conn, client, _):  # replayed: the person's words only
            await conn.initialize(protocol_version=1)
            await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            said = [u.content.text for u in client.updates if u.session_update == "user_message_chunk"]
            assert said[1:] == ["$forms fill in a.txt", "$forms again"]

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_task_child_is_one_call_whose_result_is_its_answer(server: FakeServer, workspace: Path) -> None:
    server.add(tools(("task", {"description": "find the greeting", "prompt": "What does a.txt say?"})),
               tools(("read_file", {"path": "a.txt"})),  # the child's
               text("a.txt says hello."),  # the child's answer
               text("The file greets."))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            answer = await conn.prompt(session_id=sid, prompt=words("what is in a.txt?"))
            assert answer.stop_reason == "end_turn"
            (call,) = client.calls()  # the child's own calls stay in its session
            assert (call.title, call.kind) == ("Task explore: find the greeting", "think")
            done = client.progress(call.tool_call_id)[-1]
            assert done.status == "completed"
            result = done.content[0].content.text
            assert result.startswith("a.txt says hello.") and "child session" in result
            assert user_texts(server.requests[1]) == ["What does a.txt say?"]  # the child's own short history
            assert client.text() == "The file greets."
        async with in_process(defaults(server)) as (conn, client, _):  # reopened: the same call, finished
            await conn.initialize(protocol_version=1)
            await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            (call,) = client.calls()
            assert (call.title, call.kind, call.status) == ("Task explore: find the greeting", "think", "completed")
            assert call.content[0].content.text.startswith("a.txt says hello.")

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_childs_question_is_a_call_of_its_own_and_is_settled(server: FakeServer, workspace: Path) -> None:
    """A general child in mode ask asks through the editor. Its call's id is the parent's earlier one (servers
    number calls per reply): the question must not reopen the parent's finished call, and, as the child's
    calls are not shown, the question's call is closed once answered."""
    server.add(tools(("write_file", {"path": "b.txt", "content": "b\n"})),
               tools(("task", {"description": "write c", "prompt": "write c.txt", "agent": "general"})),
               tools(("write_file", {"path": "c.txt", "content": "c\n"})),  # the child's: the same call id
               text("wrote c.txt"), text("done"))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await conn.set_session_mode(session_id=sid, mode_id="ask")
            client.answers = ["allow_once", "allow_once"]
            await conn.prompt(session_id=sid, prompt=words("write b, then have c written"))
            assert (workspace / "c.txt").read_text() == "c\n"
            parent_write, task = client.calls()
            first, second = (p.tool_call.tool_call_id for p in client.permissions)
            assert first == parent_write.tool_call_id
            assert second not in (parent_write.tool_call_id, task.tool_call_id)
            assert client.permissions[1].tool_call.title == "Write c.txt"
            assert client.progress(parent_write.tool_call_id)[-1].status == "completed"
            (settled,) = client.progress(second)
            assert settled.status == "completed" and "child agent" in settled.content[0].content.text

    asyncio.run(asyncio.wait_for(main(), 60))
