"""A `task` child at work reaches the editor as updates of the parent's task call (its step and latest call),
paced so that a busy child cannot flood the client, and none after the call's result."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from loopagent.acp.progress import ChildProgress
from tests.acp.harness import in_process, until
from tests.acp.test_cancel import cancelled_turn, running
from tests.acp.test_cancel import defaults as cancel_defaults
from tests.acp.test_skills_and_tasks import defaults, words
from tests.conftest import wait_for
from tests.fakeserver import FakeServer, text, tools


def shown(update: Any) -> str:
    return " ".join(c.content.text for c in update.content or [])


def test_a_childs_calls_show_on_the_task_call_before_its_result(server: FakeServer, workspace: Path) -> None:
    (workspace / "a.txt").write_text("hello\n")
    clients: list[Any] = []

    def childs_answer(body: dict) -> Any:
        # The child's model answers only once the editor was told the child is reading a.txt (so the update
        # cannot be one the pacing held back until the child ended); without progress updates this times out.
        wait_for(lambda: any("read_file a.txt" in shown(u) for u in clients[0].updates
                             if u.session_update == "tool_call_update"), timeout=10)
        return text("a.txt says hello.")

    server.add(tools(("task", {"description": "find the greeting", "prompt": "What does a.txt say?"})),
               tools(("read_file", {"path": "a.txt"})),  # the child's
               childs_answer, text("The file greets."))

    async def main() -> None:
        async with in_process(defaults(server)) as (conn, client, _):
            clients.append(client)
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            assert (await conn.prompt(session_id=sid, prompt=words("what is in a.txt?"))).stop_reason == "end_turn"
            (call,) = client.calls()  # the child's own calls are not calls of the session
            updates = client.progress(call.tool_call_id)
            naming = [i for i, u in enumerate(updates) if "read_file a.txt" in shown(u)]
            assert naming, "no update of the task call named the child's call"
            reading = naming[0]
            assert updates[reading].status == "in_progress" and shown(updates[reading]).startswith("step ")
            assert updates[-1].status == "completed" and shown(updates[-1]).startswith("a.txt says hello.")
            assert [u.status for u in updates[reading:]].count("completed") == 1  # nothing after the result
            assert all(u.status == "in_progress" for u in updates[:-1])

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_cancelled_child_ends_its_task_call_and_nothing_follows(server: FakeServer, workspace: Path) -> None:
    marker = "sleep 28.3"
    server.add(tools(("task", {"description": "wait", "prompt": "wait a while", "agent": "general"})),
               tools(("shell", {"command": marker})), text("never"), text("never"))

    async def main() -> None:
        async with in_process(cancel_defaults(server, "all")) as (conn, client, _):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await cancelled_turn(conn, client, sid, lambda: any(
                marker in shown(u) for u in client.updates if u.session_update == "tool_call_update"))
            (call,) = client.calls()
            updates = client.progress(call.tool_call_id)
            assert updates[-1].status == "failed" and "cancelled" in shown(updates[-1])
            assert all(u.status == "in_progress" for u in updates[:-1])
            await until(lambda: not running(marker), 5)

    asyncio.run(asyncio.wait_for(main(), 60))


def test_progress_is_paced_the_latest_arrives_and_nothing_follows_the_end() -> None:
    posted: list[Any] = []
    progress = ChildProgress(posted.append, {"c1": "c1", "c2": "c2#2"}.get, every=0.2)
    progress("other", "step 1, 0 calls")  # not a running task call: nothing
    for n in range(100):  # a busy child
        progress("c1", f"step {n}, {n} calls")
    assert [shown(u) for u in posted] == ["step 0, 0 calls"]  # the first at once, the rest wait their turn
    wait_for(lambda: len(posted) == 2)
    assert shown(posted[1]) == "step 99, 99 calls" and posted[1].tool_call_id == "c1"
    progress("c2", "step 1, 0 calls")  # another child, paced on its own
    assert posted[-1].tool_call_id == "c2#2"
    progress("c1", "step 100, 100 calls")
    progress("c1", "step 101, 101 calls")
    waiting = progress.children["c1"].timer
    assert waiting is not None and len(posted) == 3
    progress("c1", None)  # ended: what waited is dropped, and nothing comes later
    waiting.join(5)
    assert not waiting.is_alive() and len(posted) == 3 and "c1" not in progress.children
