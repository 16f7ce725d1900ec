"""ScriptedModel: plain assistant messages or text drive the real Agent with the real tools."""

from __future__ import annotations

from loopagent.cancel import Cancel
from loopagent.errors import IncompleteTurn
from loopagent.events import TextDelta, ThinkingDelta, ToolFinished
from loopagent.loop import Agent
from loopagent.messages import AssistantMessage, SystemMessage, ToolResult, UserMessage
from loopagent.scripted import ScriptedModel, call, calls
from loopagent.tools import Registry, ToolContext, default_tools
from loopagent.tools.workspace import Workspace


def agent_for(model, ws, events) -> Agent:
    return Agent(model=model, registry=Registry(default_tools()), tools=ToolContext(Workspace(ws)),
                 listeners=(events.append,))


def test_a_script_writes_reads_and_answers_through_the_real_loop_and_tools(tmp_path):
    model = ScriptedModel([
        calls(call("write_file", {"path": "notes.txt", "content": "alpha\nbeta\n"}), text="Writing it."),
        calls(call("read_file", {"path": "notes.txt"}), call("read_file", {"path": "missing.txt"})),
        AssistantMessage(text="notes.txt holds alpha and beta.", thinking="both lines are there"),
    ])
    events: list = []
    history = [SystemMessage("s"), UserMessage("write notes")]
    end = agent_for(model, tmp_path, events).run(history, "write notes", Cancel())
    assert (end.status, end.steps) == ("completed", 3)
    assert (tmp_path / "notes.txt").read_text() == "alpha\nbeta\n"
    results = [e.result for e in events if isinstance(e, ToolFinished)]
    assert [r.is_error for r in results] == [False, False, True]
    assert "beta" in results[1].content and "missing.txt" in results[2].content
    # listeners see the deltas a stream would have produced
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Writing it.", "notes.txt holds alpha and beta."]
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["both lines are there"]
    # every request is kept; the third one carries both read results back to the model
    assert len(model.requests) == 3
    third = [m for m in model.requests[2][0] if isinstance(m, ToolResult)]
    assert [r.name for r in third] == ["write_file", "read_file", "read_file"]
    assert history[-1].text == "notes.txt holds alpha and beta."


def test_calls_without_a_stop_reason_become_tool_calls_as_a_stream_would_say(tmp_path):
    model = ScriptedModel([AssistantMessage(tool_calls=(call("list_files", {}),)), "done"])
    events: list = []
    end = agent_for(model, tmp_path, events).run([SystemMessage("s"), UserMessage("list")], "", Cancel())
    assert end.status == "completed"
    assert model.requests and [e for e in events if isinstance(e, ToolFinished)][0].call.name == "list_files"


def test_a_scripted_error_and_an_exhausted_script_end_the_run_with_their_status(tmp_path):
    events: list = []
    end = agent_for(ScriptedModel([IncompleteTurn("cut short")]), tmp_path, events).run(
        [SystemMessage("s"), UserMessage("go")], "", Cancel())
    assert (end.status, end.exit_code) == ("incomplete_model_turn", 1)
    end = agent_for(ScriptedModel([calls(call("list_files"))]), tmp_path, events).run(
        [SystemMessage("s"), UserMessage("go")], "", Cancel())
    assert end.status == "model_error" and "no turn 2" in end.message


def test_requests_without_tools_get_the_summary_and_use_no_turn():
    model = ScriptedModel(["the answer"], summary="the summary")
    assert model.complete([UserMessage("sum up")], [], lambda e: None, Cancel()).text == "the summary"
    assert model.complete([UserMessage("go")], [{"x": 1}], lambda e: None, Cancel()).text == "the answer"
    assert model.served == 1
