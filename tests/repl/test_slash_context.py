"""Slash commands that replace the conversation must leave the context window consistent with it."""

from __future__ import annotations

import io
import os
import sys

from loopagent.cli.repl.commands import COMMANDS
from loopagent.cli.repl.repl import Repl
from loopagent.client.replay import ReplayClient
from loopagent.config import Settings
from loopagent.loop import Agent
from loopagent.messages import AssistantMessage, SystemMessage, UserMessage
from loopagent.render.terminal import TerminalRenderer
from loopagent.tools import Registry, ToolContext, default_tools
from loopagent.tools.workspace import Workspace


def test_clear_after_a_compaction_forgets_the_summary(tmp_path, monkeypatch):
    devnull = open(os.devnull)  # the REPL's type-ahead needs a real file descriptor on stdin
    monkeypatch.setattr(sys, "stdin", devnull)
    agent = Agent(model=ReplayClient([]), registry=Registry(default_tools()), tools=ToolContext(Workspace(tmp_path)))
    history = [SystemMessage("sys"), UserMessage("old task"), AssistantMessage("old answer")]
    agent.context.summary, agent.context.upto = "summary of the old task", 2
    assert any("summary of the old task" in getattr(m, "content", "") for m in agent.context.view(history))
    repl = Repl(agent, history, Settings(), TerminalRenderer(io.StringIO(), color=False))
    COMMANDS["/clear"].run(repl, "", None)
    history.append(UserMessage("new task"))
    sent = agent.context.view(history)
    assert [m.content for m in sent] == ["sys", "new task"]
    devnull.close()
