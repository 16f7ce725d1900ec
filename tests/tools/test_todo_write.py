"""todo_write in process: the list replaced whole, one item in progress at most (else an error result the
model reads), kept in the result's details through a session record, shown as a checklist and a `todo` JSON
line, and put back into a compaction summary when its call was summarised away."""

from __future__ import annotations

import io
import json

from loopagent.context.compact import TODO_HEAD, with_todos
from loopagent.events import ToolCalled, ToolFinished
from loopagent.messages import AssistantMessage, ToolCall, ToolResult, UserMessage, from_record, to_record
from loopagent.policy import Policy
from loopagent.render.jsonl import JsonPrinter
from loopagent.render.terminal import TerminalRenderer
from loopagent.tools import Registry, ToolContext, default_tools
from loopagent.tools.workspace import Workspace

ITEMS = [{"content": "read the parser", "status": "completed"}, {"content": "fix the bug", "status": "in_progress"},
         {"content": "run the tests", "status": "pending"}]


def call(todos, call_id: str = "t1") -> ToolCall:
    return ToolCall(call_id, "todo_write", json.dumps({"todos": todos}))


def run(registry: Registry, c: ToolCall, tmp_path):
    prepared = registry.prepare(c)  # a call whose arguments do not fit the schema is answered here
    return prepared if isinstance(prepared, ToolResult) else registry.run(prepared, ToolContext(Workspace(tmp_path)))


def test_the_list_is_replaced_whole_and_kept_in_the_details(tmp_path):
    registry = Registry(default_tools())
    first = run(registry, call(ITEMS), tmp_path)
    assert not first.is_error and "1/3 done" in first.content and "[>] fix the bug" in first.content
    second = run(registry, call([{"content": "ship it", "status": "pending"}], "t2"), tmp_path)
    assert second.details.todos == (("ship it", "pending"),)
    back = from_record(json.loads(json.dumps(to_record(first))))
    assert back.details.todos == (("read the parser", "completed"), ("fix the bug", "in_progress"),
                                  ("run the tests", "pending"))


def test_two_items_in_progress_is_an_error_the_model_can_read(tmp_path):
    registry = Registry(default_tools())
    busy = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]
    result = run(registry, call(busy), tmp_path)
    assert result.is_error and "at most one item may be in_progress" in result.content
    assert result.details is None or result.details.todos is None
    wrong = run(registry, call([{"content": "a", "status": "doing"}]), tmp_path)
    assert wrong.is_error and "status" in wrong.content


def test_it_runs_unasked_in_every_mode_plan_included():
    for mode in ("ask", "plan"):
        spec = {s.name: s for s in Registry(default_tools()).specs()}["todo_write"]
        assert Policy(mode).decide(spec, {"todos": ITEMS}, spec.read_only_for({})).verdict == "allow"


def test_the_terminal_shows_a_checklist_and_json_a_todo_line(tmp_path):
    c = call(ITEMS)
    result = run(Registry(default_tools()), c, tmp_path).answering(c)
    plain = io.StringIO()
    renderer = TerminalRenderer(plain, color=False)
    renderer(ToolCalled(c, ""))
    renderer(ToolFinished(c, result))
    assert "[x] read the parser\n" in plain.getvalue() and "[ ] run the tests" in plain.getvalue()
    styled = io.StringIO()
    renderer = TerminalRenderer(styled, color=True, live=False, width=80)
    renderer(ToolFinished(c, result))
    assert "\x1b[2;9mread the parser" in styled.getvalue()  # done: dimmed and struck
    out = io.StringIO()
    JsonPrinter(out)(ToolFinished(c, result))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines[-1] == {"type": "todo", "todos": ITEMS}


def test_a_summarised_todo_list_is_sent_again_with_the_summary(tmp_path):
    c = call(ITEMS)
    result = run(Registry(default_tools()), c, tmp_path).answering(c)
    history = [UserMessage("task"), AssistantMessage("", tool_calls=(c,)), result, AssistantMessage("next")]
    summary = with_todos("SUMMARY", history, upto=4)
    assert summary.startswith("SUMMARY\n\n" + TODO_HEAD) and "[>] fix the bug" in summary
    assert with_todos("SUMMARY", history, upto=2) == "SUMMARY"  # the list is still in the recent turns
