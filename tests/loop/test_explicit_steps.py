"""The loop's explicit steps: compaction is a model turn of its own (announced, spinner, counted,
cancellable by the turn's token) and a checkpoint is taken by `before_change` before a mutating call."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from loopagent.cancel import Cancel
from loopagent.context import ContextWindow, messages_tokens, tools_tokens
from loopagent.events import Compacted, Notice, RunEnd, ToolStarted, TurnStart
from loopagent.loop import Agent, Limits, Steering
from loopagent.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolResult, UserMessage
from loopagent.policy import Policy
from loopagent.scripted import ScriptedModel, call, calls
from loopagent.tools import Registry, ToolContext, default_tools
from loopagent.tools.workspace import Workspace


def long_history() -> list[Message]:
    out: list[Message] = [SystemMessage("You are loop."), UserMessage("Summarise the files.")]
    for n in range(10):
        c = ToolCall(f"c{n}", "read_file", f'{{"path": "f{n}.py"}}')
        out += [AssistantMessage(tool_calls=(c,), stop_reason="tool_calls"),
                ToolResult(c.id, "read_file", "\n".join(f"f{n} line {i}: total = {i * 3}" for i in range(12)))]
    return out


def agent_for(ws: Path, model: ScriptedModel, seen: list, ctx_size: int = 16384) -> Agent:
    registry = Registry(default_tools())
    return Agent(model=model, registry=registry, tools=ToolContext(Workspace(ws)), policy=Policy("all"),
                 listeners=(seen.append,), limits=Limits(max_steps=5, max_nudges=0),
                 context=ContextWindow(ctx_size, reserve=1 << 20))


def small_window(history: list[Message], agent: Agent) -> int:
    """A --ctx-size the history (with the tool schemas) overflows, so the next request must compact."""
    return 2 * (messages_tokens(history) + tools_tokens(agent.registry.specs()) - 150)


def test_compaction_is_a_turn_of_its_own_announced_and_counted(tmp_path):
    history, seen = long_history(), []
    model = ScriptedModel(["All summarised."], summary="Read f0-f9; each lists totals.")
    agent = agent_for(tmp_path, model, seen)
    agent.context.ctx_size = small_window(history, agent)
    end = agent.run(history, "Summarise the files.", Cancel())
    assert end.status == "completed" and end.steps == 1  # the summary is a request, not a step
    kinds = [(type(e).__name__, getattr(e, "purpose", getattr(e, "kind", ""))) for e in seen
             if isinstance(e, (Notice, TurnStart, Compacted))]
    assert kinds == [("Notice", "compact"), ("TurnStart", "compact"), ("Compacted", ""), ("TurnStart", "answer")]
    (compacted,) = [e for e in seen if isinstance(e, Compacted)]
    assert [tools for _, tools in model.requests] == [[], list(agent.registry.specs())]
    assert end.usage.prompt_tokens > compacted.usage.prompt_tokens > 0  # the summary's cost is the run's


def test_a_cancel_during_the_summary_ends_the_run_aborted_and_asks_nothing_more(tmp_path):
    history, seen, cancel = long_history(), [], Cancel()

    def on_request(messages, tools):
        if not tools:  # Ctrl+C while the summary is being written
            cancel.set()

    model = ScriptedModel(["never sent"], summary="unused", on_request=on_request)
    agent = agent_for(tmp_path, model, seen)
    agent.context.ctx_size = small_window(history, agent)
    end = agent.run(history, "Summarise the files.", cancel)
    assert end.status == "aborted" and end.exit_code == 130
    assert [tools for _, tools in model.requests] == [[]]  # no answer was asked for
    assert agent.context.summary == "" and not [e for e in seen if isinstance(e, Compacted)]
    assert isinstance(seen[-1], RunEnd)


def test_before_change_runs_before_each_mutating_call_and_never_for_reads(tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    seen: list = []
    model = ScriptedModel([calls(call("read_file", {"path": "a.txt"}),
                                 call("write_file", {"path": "b.txt", "content": "b\n"})), "written"])
    agent = agent_for(tmp_path, model, seen)
    steps: list[tuple[str, str]] = []

    def before_change(c: ToolCall, subject: str) -> None:
        steps.append(("checkpoint", f"{c.name} {subject}"))
        assert not (tmp_path / "b.txt").exists()  # taken before the change

    agent = replace(agent, steering=Steering(before_change=before_change), listeners=(
        *agent.listeners, lambda e: steps.append(("started", e.call.name)) if isinstance(e, ToolStarted) else None))
    end = agent.run([SystemMessage("s"), UserMessage("copy")], "copy", Cancel())
    assert end.status == "completed" and (tmp_path / "b.txt").read_text() == "b\n"
    assert steps == [("started", "read_file"), ("checkpoint", "write_file b.txt"), ("started", "write_file")]


def test_a_failing_health_stops_the_run_between_steps_with_steps_and_usage_kept(tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    seen: list = []
    model = ScriptedModel([calls(call("read_file", {"path": "a.txt"}), call("read_file", {"path": "a.txt"})),
                           "never asked"])
    agent = agent_for(tmp_path, model, seen)
    broken = []
    agent = replace(agent, steering=Steering(health=lambda: broken[0] if broken else ""), listeners=(
        *agent.listeners, lambda e: broken.append("cannot write session file x: disk full")
        if isinstance(e, ToolStarted) else None))
    history: list[Message] = [SystemMessage("s"), UserMessage("read")]
    end = agent.run(history, "read", Cancel())
    assert (end.status, end.exit_code, end.steps) == ("error", 1, 1)
    assert end.message.startswith("cannot write session file")
    assert len(model.requests) == 1
    results = [m for m in history if isinstance(m, ToolResult)]
    assert len(results) == 2  # every call still has its one result: the history stays paired
