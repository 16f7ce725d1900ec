"""One updating line per `task` child under the running call (the live area's activity), gone when it ends."""

from __future__ import annotations

import io

from loopagent.events import AgentStart, ToolCalled, TurnStart
from loopagent.messages import ToolCall
from loopagent.render.terminal import TerminalRenderer
from loopagent.run.child import Progress


def test_each_child_has_its_line_and_it_follows_steps_and_calls():
    renderer = TerminalRenderer(io.StringIO(), color=True, live=False, width=100)
    one, two = Progress(renderer, 1, "explore: find the parser"), Progress(renderer, 2, "explore: read \x1b[31mtests")
    one(AgentStart("find"))
    two(TurnStart(1))
    one(TurnStart(2))
    one(ToolCalled(ToolCall("c", "grep", "{}"), "def parse"))
    label = renderer.sink.activity.label
    first, second = label.split("\n  ")
    assert first == "task explore: find the parser · step 2, 1 calls · grep def parse"
    assert second.startswith("task explore: read ") and "\x1b" not in second and "step 1, 0 calls" in second
    one.done()
    assert renderer.sink.activity.label == second
    two.done()
    assert renderer.sink.activity.label == "running task"
