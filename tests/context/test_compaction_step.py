"""Compaction as a step of its own, through the loop's path (`Agent.compact` for /compact, `Agent.run`
when a request must make room): announced before the summary is asked for, stopped by the turn's cancel
token, and a failing summary reported as the model's failure, not as a cancel."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopagent.cancel import Cancel
from loopagent.context import ContextWindow, messages_tokens, tools_tokens
from loopagent.errors import CompactionCancelled, ModelError
from loopagent.events import Compacted, Notice, TurnStart
from loopagent.loop import Agent, Limits
from loopagent.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolResult, UserMessage
from loopagent.policy import Policy
from loopagent.scripted import ScriptedModel
from loopagent.tools import Registry, ToolContext, default_tools
from loopagent.tools.workspace import Workspace

SYSTEM = SystemMessage("You are loop.")
SUMMARY = "Read f0-f9; each lists totals."


def history() -> list[Message]:
    out: list[Message] = [SYSTEM, UserMessage("Summarise the files.")]
    for n in range(10):
        call = ToolCall(f"c{n}", "read_file", f'{{"path": "f{n}.py"}}')
        out += [AssistantMessage(tool_calls=(call,), stop_reason="tool_calls"),
                ToolResult(call.id, "read_file", "\n".join(f"f{n} line {i}: total = {i * 3}" for i in range(12)))]
    return out


def agent_for(ws: Path, model: ScriptedModel, seen: list, h: list[Message]) -> Agent:
    """An agent whose window the history (with the tool schemas) overflows, so its next request must compact."""
    registry = Registry(default_tools())
    ctx_size = 2 * (messages_tokens(h) + tools_tokens(registry.specs()) - 150)
    return Agent(model=model, registry=registry, tools=ToolContext(Workspace(ws)), policy=Policy("all"),
                 listeners=(seen.append,), limits=Limits(max_steps=5, max_nudges=0),
                 context=ContextWindow(ctx_size, reserve=1 << 20))


def test_the_compaction_is_announced_before_the_model_is_asked(tmp_path):
    h, seen, asked_after = history(), [], []
    model = ScriptedModel([], summary=SUMMARY, on_request=lambda messages, tools: asked_after.append(len(seen)))
    event = agent_for(tmp_path, model, seen, h).compact(h, Cancel())
    steps = [(e, n) for n, e in enumerate(seen) if isinstance(e, (Notice, TurnStart, Compacted))]
    (notice, _), (start, _), (done, done_at) = steps
    assert isinstance(notice, Notice) and notice.kind == "compact" and "older messages" in notice.text
    assert isinstance(start, TurnStart) and start.purpose == "compact"
    assert asked_after == [2] and done is event and done_at == 2  # asked between the announcement and the result
    assert event.summary == SUMMARY and [tools for _, tools in model.requests] == [[]]


def test_a_cancel_during_the_summary_stops_it_as_aborted_and_keeps_nothing(tmp_path):
    h, seen, cancel = history(), [], Cancel()

    def on_request(messages, tools):
        cancel.set()  # Ctrl+C while the summary is being written

    model = ScriptedModel([], summary="unused", on_request=on_request)
    agent = agent_for(tmp_path, model, seen, h)
    with pytest.raises(CompactionCancelled) as info:
        agent.compact(h, cancel=cancel)
    assert info.value.status == "aborted" and len(model.requests) == 1
    assert agent.context.summary == "" and not [e for e in seen if isinstance(e, Compacted)]  # nothing half-done


def test_a_cancel_set_before_a_compaction_is_needed_asks_nothing(tmp_path):
    h, seen, cancel = history(), [], Cancel()
    cancel.set()
    model = ScriptedModel(["never sent"], summary="unused")
    end = agent_for(tmp_path, model, seen, h).run(h, "Summarise the files.", cancel)
    assert end.status == "aborted" and model.requests == []
    assert not [e for e in seen if isinstance(e, (Notice, Compacted))]


def test_a_failing_summary_without_a_cancel_is_the_model_s_failure(tmp_path):
    h, seen = history(), []
    model = ScriptedModel([ModelError("stream closed")])  # the summary request is the first one asked
    with pytest.raises(ModelError, match="stream closed"):
        agent_for(tmp_path, model, seen, h).compact(h, Cancel())

    h, model = history(), ScriptedModel([ModelError("stream closed")])
    end = agent_for(tmp_path, model, seen, h).run(h, "Summarise the files.", Cancel())
    assert (end.status, end.message) == ("model_error", "stream closed") and len(model.requests) == 1
