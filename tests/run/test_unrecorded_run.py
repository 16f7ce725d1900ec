"""A run that records nothing (`RunSpec.record` False, `loop replay`'s): opened through `open_run` like any other,
with the caller's model and answers swapped in, its conversation in memory and nothing written under $LOOP_HOME."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx

from loopagent.cancel import Cancel
from loopagent.client.replay import SessionTurns
from loopagent.messages import AssistantMessage, SystemMessage, ToolCall, UserMessage
from loopagent.run.build import Host
from loopagent.run.run import open_run
from loopagent.run.spec import Flags, RunSpec


class Answers:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def approve(self, call, subject, preview, decision, cancel) -> bool:
        self.asked.append(call.name)
        return False


def test_an_unrecorded_run_uses_the_given_model_and_answers_and_leaves_home_untouched(tmp_path: Path):
    def no_server(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"the model was swapped in: nothing may reach {request.url}")

    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    host = Host(env={"PATH": "/usr/bin:/bin"}, home=home, cwd=ws, out=io.StringIO(), err=io.StringIO(),
                transport=httpx.MockTransport(no_server))
    write = ToolCall("c1", "write_file", json.dumps({"path": "made.txt", "content": "x\n"}))
    model = SessionTurns([AssistantMessage(tool_calls=[write]), AssistantMessage("done")])
    answers = Answers()
    # approval ask: the write reaches a question, answered by `answers` ("no") in a run that stays headless
    spec = RunSpec(task="make it", workspace=ws, json=True, record=False,
                   flags=Flags(sandbox="off", checkpoints=True, ctx_size=16384, approval="ask"))
    with open_run(spec, host, model=model, answers=answers) as run:
        assert run.rec is None and run.agent.model is model and run.services().session_path is None
        run.add(SystemMessage("recorded system prompt"))
        run.add(UserMessage("make it"))
        end = run.answer("make it", Cancel())
    assert end.status == "completed" and answers.asked == ["write_file"] and not (ws / "made.txt").exists()
    assert [type(m).__name__ for m in run.history][:3] == ["SystemMessage", "UserMessage", "AssistantMessage"]
    assert run.history[-1].text == "done"
    assert sorted(p.name for p in home.rglob("*")) == []  # no session file, no checkpoints, no history
    assert model.position == 2
