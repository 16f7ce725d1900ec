"""cli/repl/ as a package: one table of commands, the approval mode in one place, no import circle."""

from __future__ import annotations

import ast
import io
import os
import sys
from pathlib import Path

import pytest

import loopagent.cli
from loopagent.cli.repl.commands import COMMANDS, dispatch
from loopagent.cli.repl.repl import Repl
from loopagent.client.replay import ReplayClient
from loopagent.config import Settings
from loopagent.loop import Agent
from loopagent.messages import SystemMessage
from loopagent.policy import Policy
from loopagent.render.terminal import TerminalRenderer
from loopagent.tools import Registry, ToolContext, default_tools
from loopagent.tools.workspace import Workspace


@pytest.fixture(autouse=True)
def stdin(monkeypatch):
    with open(os.devnull) as devnull:  # the REPL's type-ahead needs a real file descriptor on stdin
        monkeypatch.setattr(sys, "stdin", devnull)
        yield


def bare_repl(tmp_path, monkeypatch, mode: str) -> tuple[Repl, io.StringIO]:
    monkeypatch.setenv("LOOP_HOME", str(tmp_path / "home"))
    agent = Agent(model=ReplayClient([]), registry=Registry(default_tools()), tools=ToolContext(Workspace(tmp_path)),
                  policy=Policy(mode))
    out = io.StringIO()
    return Repl(agent, [SystemMessage("sys")], Settings(approval=mode, ctx_size=16384), TerminalRenderer(out, color=False)), out


def test_approval_changes_the_policy_the_calls_are_judged_by_and_the_toolbar_shows_it(tmp_path, monkeypatch):
    repl, out = bare_repl(tmp_path, monkeypatch, "ask")
    assert "approval ask" in repl.toolbar()
    dispatch(repl, "/approval all", None)
    assert repl.agent.policy.mode == "all" and "approval all" in repl.toolbar()
    dispatch(repl, "/approval", None)
    assert out.getvalue().splitlines()[-1] == "approval: all"
    dispatch(repl, "/approval everything", None)  # refused: nothing changes
    assert repl.agent.policy.mode == "all" and "approval all" in repl.toolbar()
    assert "must be one of" in out.getvalue()


def test_help_lists_the_table_and_a_template_cannot_take_a_commands_name(tmp_path, monkeypatch):
    repl, out = bare_repl(tmp_path, monkeypatch, "edits")
    prompts = tmp_path / "home" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "review.md").write_text("review this\n")
    (prompts / "undo.md").write_text("not the command\n")
    dispatch(repl, "/help", None)
    names = [line.split()[0] for line in out.getvalue().splitlines() if line.startswith("  /")]
    assert names == [*COMMANDS, "/review"]
    assert dispatch(repl, "/nope", None) is None and "unknown command /nope" in out.getvalue()
    assert dispatch(repl, "/exit", None) == 0


def imports(path: Path, modules: set[str]) -> set[str]:
    """The modules of `modules` that `path` imports anywhere: at the top, lazily, or for type checking alone."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return found & modules


def test_no_module_of_the_repl_takes_part_in_an_import_circle():
    root = Path(loopagent.cli.__file__).parent
    files = {"loopagent.cli." + ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
             for p in root.rglob("*.py")}
    graph = {m: imports(p, set(files)) - {m} for m, p in files.items()}

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            m = todo.pop()
            if m == goal:
                return True
            if m not in seen:
                seen.add(m)
                todo.extend(graph[m])
        return False

    repl = [m for m in files if m.startswith("loopagent.cli.repl.")]
    assert len(repl) > 10
    circles = [(m, n) for m in repl for n in graph[m] if reaches(n, m)]
    assert circles == []
