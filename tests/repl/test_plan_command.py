"""`/plan` in the REPL: on and off again, the toolbar shows it, the model is told at its next message, and a
project file's forced plan mode cannot be left."""

from __future__ import annotations

import io
import os
import sys

import pytest

from loopagent.cli.repl.commands import dispatch
from loopagent.cli.repl.repl import Repl
from loopagent.client.replay import ReplayClient
from loopagent.config import Settings
from loopagent.loop import Agent
from loopagent.messages import SystemMessage
from loopagent.policy import Policy
from loopagent.render.terminal import TerminalRenderer
from loopagent.sandbox import BwrapExecutor, ReadOnlyWhen, spec_from
from loopagent.tools import Registry, ToolContext, default_tools
from loopagent.tools.workspace import Workspace


@pytest.fixture(autouse=True)
def stdin(monkeypatch):
    with open(os.devnull) as devnull:  # the REPL's type-ahead needs a real file descriptor on stdin
        monkeypatch.setattr(sys, "stdin", devnull)
        yield


def repl_in(tmp_path, monkeypatch, policy: Policy) -> tuple[Repl, io.StringIO]:
    monkeypatch.setenv("LOOP_HOME", str(tmp_path / "home"))
    spec = spec_from("workspace-write", tmp_path, dict(os.environ))
    executor = ReadOnlyWhen(BwrapExecutor(spec), lambda: policy.mode == "plan")
    agent = Agent(model=ReplayClient([]), registry=Registry(default_tools()),
                  tools=ToolContext(Workspace(tmp_path), executor=executor), policy=policy)
    out = io.StringIO()
    settings = Settings(approval=policy.mode, ctx_size=16384)
    return Repl(agent, [SystemMessage("sys")], settings, TerminalRenderer(out, color=False)), out


def test_plan_switches_on_and_back_and_the_shell_follows(tmp_path, monkeypatch):
    repl, out = repl_in(tmp_path, monkeypatch, Policy("ask"))
    executor = repl.agent.tools.executor
    assert "workspace writable" in executor.describe()
    dispatch(repl, "/plan", None)
    assert repl.agent.policy.mode == "plan" and "approval plan" in repl.toolbar()
    assert "workspace read-only" in executor.describe()
    assert "plan mode is on" in repl.message("what would you change?")
    assert repl.context_notes == []  # said once, with the next message
    dispatch(repl, "/plan", None)
    assert repl.agent.policy.mode == "ask" and "workspace writable" in executor.describe()
    assert "plan mode is off (approval ask)" in repl.message("go ahead")
    dispatch(repl, "/plan off", None)  # already off: nothing changes, nothing is queued
    assert repl.agent.policy.mode == "ask" and repl.context_notes == []
    dispatch(repl, "/plan maybe", None)
    assert "error: /plan takes on or off" in out.getvalue()


def test_a_forced_plan_mode_is_left_by_neither_plan_nor_approval(tmp_path, monkeypatch):
    repl, out = repl_in(tmp_path, monkeypatch, Policy("plan", floor="plan"))
    dispatch(repl, "/plan off", None)
    dispatch(repl, "/approval all", None)
    assert repl.agent.policy.mode == "plan" and "approval plan" in repl.toolbar()
    assert out.getvalue().count("may not loosen") == 2
