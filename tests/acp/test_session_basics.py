"""initialize, session/new and a text turn through the SDK's client, in process against the fake server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from acp import RequestError, schema

from loopagent.acp.agent import Defaults
from loopagent.run.spec import Flags
from tests.acp.harness import in_process
from tests.fakeserver import FakeServer, Reply, error, text, text_events, tools


def defaults(server: FakeServer, **flags) -> Defaults:
    return Defaults(Flags(base_url=server.url, ctx_size=16384, **flags))


def test_initialize_new_session_and_a_text_turn(server: FakeServer, workspace: Path, loop_home: Path) -> None:
    server.add(text("Hello from loop."))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            init = await conn.initialize(protocol_version=1)
            assert init.protocol_version == 1
            assert init.agent_capabilities.load_session is True
            assert init.agent_capabilities.prompt_capabilities.embedded_context is True
            assert init.agent_capabilities.mcp_capabilities.http is False
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            assert [m.id for m in new.modes.available_modes][:3] == ["ask", "edits", "all"]
            assert new.modes.current_mode_id == "edits"
            answer = await conn.prompt(session_id=new.session_id,
                                       prompt=[schema.TextContentBlock(type="text", text="say hello")])
            assert answer.stop_reason == "end_turn"
            assert client.text() == "Hello from loop."
            assert "available_commands_update" in client.kinds()
            # the id is loop's session id: the file is there, holding the turn
            files = list((loop_home / "sessions").rglob(f"{new.session_id}.jsonl"))
            assert len(files) == 1
            lines = [json.loads(line) for line in files[0].read_text().splitlines()]
            assert any(line.get("role") == "user" and line.get("content") == "say hello" for line in lines)
            # an ordinary loop session: `loop sessions` lists it by its first message
            from loopagent.session import listing

            assert [(s.id, s.task) for s in listing(loop_home, workspace)] == [(new.session_id, "say hello")]

    asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.parametrize("cwd", ["relative/dir", "/no/such/directory"])
def test_a_bad_cwd_is_a_json_rpc_error(server: FakeServer, cwd: str) -> None:
    async def main() -> None:
        async with in_process(defaults(server)) as (conn, _, _):
            await conn.initialize(protocol_version=1)
            with pytest.raises(RequestError) as caught:
                await conn.new_session(cwd=cwd, mcp_servers=[])
            assert caught.value.code == -32602
            assert "cwd" in json.dumps(caught.value.data)

    asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.parametrize(("reply", "flags", "expected"), [
    (Reply(events=text_events("I can't", finish="content_filter")), {}, "refusal"),
    (tools(("read_file", {"path": "a.txt"})), {"max_steps": 1}, "max_turn_requests"),
])
def test_stop_reasons(server: FakeServer, workspace: Path, reply, flags, expected) -> None:
    server.add(reply)

    async def main() -> None:
        async with in_process(defaults(server, **flags)) as (conn, _, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            answer = await conn.prompt(session_id=sid, prompt=[schema.TextContentBlock(type="text", text="go")])
            assert answer.stop_reason == expected

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_server_failure_is_a_json_rpc_error(server: FakeServer, workspace: Path) -> None:
    server.add(error(401, "invalid api key"))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, _, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            with pytest.raises(RequestError) as caught:
                await conn.prompt(session_id=sid, prompt=[schema.TextContentBlock(type="text", text="go")])
            assert caught.value.code == -32603 and "401" in json.dumps(caught.value.data)

    asyncio.run(asyncio.wait_for(main(), 60))


def test_reasoning_arrives_as_thought_chunks_before_the_answer(server: FakeServer, workspace: Path) -> None:
    chunk = {"id": "x", "object": "chat.completion.chunk", "model": "fake"}
    deltas = [{"reasoning_content": "Weigh the "}, {"reasoning_content": "options."}, {"content": "The answer."}]
    server.add(Reply(events=[*({**chunk, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas),
                             {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[schema.TextContentBlock(type="text", text="q")])
            said = [u for u in client.updates if u.session_update in ("agent_thought_chunk", "agent_message_chunk")]
            assert [(u.session_update, u.content.text) for u in said] == [
                ("agent_thought_chunk", "Weigh the "), ("agent_thought_chunk", "options."),
                ("agent_message_chunk", "The answer.")]

    asyncio.run(asyncio.wait_for(main(), 60))
