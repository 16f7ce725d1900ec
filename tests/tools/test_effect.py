"""Tools say what they do (ToolSpec.effect, path_param): the policy, the loop's read-only batching and the
approval display follow the spec, so a new tool needs no name written into any of them."""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest

from loopagent.cancel import Cancel
from loopagent.client.replay import ReplayClient
from loopagent.events import ToolStarted
from loopagent.loop import Agent, Steering
from loopagent.mcp.tools import path_param_of
from loopagent.messages import ToolCall, ToolResult
from loopagent.policy import Policy, Rule
from loopagent.render.terminal import TerminalRenderer
from loopagent.tools import Registry, SchemaTool, ToolContext, ToolSpec, default_tools
from loopagent.tools.workspace import Workspace
from tests.fakeserver import text_events, tool_events

PATH_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def outline_tool(barrier: threading.Barrier, ran: list[str]) -> SchemaTool:
    """A read tool no module of loop names. Two calls must meet at the barrier: run one after the
    other, the first waits alone and the barrier breaks."""

    def run(args: dict, ctx: ToolContext) -> ToolResult:
        barrier.wait()
        ran.append(args["path"])
        return ToolResult.ok(f"outline of {args['path']}")

    spec = ToolSpec("outline", "Outline a file.", PATH_SCHEMA, effect="read", path_param="path")
    return SchemaTool(spec, run)


def test_a_new_read_tool_is_batched_and_allowed_like_read_file(tmp_path):
    ran: list[str] = []
    registry = Registry([*default_tools(), outline_tool(threading.Barrier(2, timeout=10), ran)])
    policy = Policy("ask", [Rule("deny", "read_file(.env)", "t")], tmp_path, tools=registry.specs())
    started: list[ToolStarted] = []
    calls = [("outline", {"path": "a.py"}), ("outline", {"path": "b.py"}), ("outline", {"path": "./.env"})]
    agent = Agent(model=ReplayClient([tool_events(calls), text_events("done")]), registry=registry,
                  tools=ToolContext(Workspace(tmp_path)), policy=policy, steering=Steering(approver=None),  # headless: nobody to ask
                  listeners=(lambda e: started.append(e) if isinstance(e, ToolStarted) else None,))
    history: list = []
    end = agent.run(history, "outline", Cancel())
    results = [m for m in history if isinstance(m, ToolResult)]
    assert end.status == "completed"
    assert [r.content for r in results[:2]] == ["outline of a.py", "outline of b.py"]  # ran together, in call order
    assert sorted(ran) == ["a.py", "b.py"] and [e.read_only for e in started] == [True, True]
    # read_file's deny rule keeps every read tool away from the file, this one included
    assert results[2].is_error and 'deny "read_file(.env)"' in results[2].content


@pytest.mark.parametrize("mode", ["ask", "edits", "all"])
@pytest.mark.parametrize("path", ["src/a.py", ".env", "./.env", "secrets/k.pem"])
def test_a_read_tool_is_decided_as_read_file_is(mode, path):
    spec = ToolSpec("outline", "Outline a file.", PATH_SCHEMA, effect="read", path_param="path")
    rules = [Rule("deny", "read_file(.env)", "t"), Rule("deny", "outline(secrets/*)", "t")]
    policy = Policy(mode, rules, "/w", tools=[*Registry(default_tools()).specs(), spec])
    ours = policy.decide(spec, {"path": path}, spec.read_only_for({"path": path}))
    theirs = policy.decide("read_file", {"path": path}, True)
    assert (ours.verdict, ours.rule) == (theirs.verdict, theirs.rule)
    assert ours.verdict == ("allow" if path == "src/a.py" else "deny")
    assert policy.may_read("secrets/k.pem") is False  # grep and list_files skip what the new tool may not read


def test_edit_and_exec_tools_are_judged_by_their_effect_not_their_name():
    patch = ToolSpec("patch", "Patch a file.", {"type": "object", "properties": {"file": {"type": "string"}}},
                     effect="edit", path_param="file")
    run = ToolSpec("run", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}},
                   effect="exec")
    rules = [Rule("allow", "patch(docs/*)", "t"), Rule("deny", "patch(.env)", "t"), Rule("allow", "pytest *", "t")]

    def verdict(mode: str, spec: ToolSpec, **args: str) -> str:
        return Policy(mode, rules, "/w").decide(spec, args, spec.read_only_for(args)).verdict

    assert [verdict(m, patch, file="src/a.py") for m in ("ask", "edits", "all")] == ["ask", "allow", "allow"]
    assert verdict("ask", patch, file="docs/x.md") == "allow"  # its path argument is what rules match
    assert verdict("all", patch, file=".env") == "deny"
    assert verdict("ask", run, command="pytest -q") == "allow"  # the shell checker and its rules
    assert verdict("all", run, command="sudo id") == "deny"
    assert verdict("edits", run, command="rm -rf build") == "ask"


def test_mcp_tools_are_external_and_name_a_declared_path():
    assert path_param_of(PATH_SCHEMA) == "path"
    assert path_param_of({"type": "object", "properties": {"repo": {"type": "string"}}}) is None
    assert path_param_of({"type": "object"}) is None


def test_the_approval_shows_an_exec_tools_call_as_a_command():
    out = io.StringIO()
    renderer = TerminalRenderer(out, color=False, live=False, width=100,
                                tools=[ToolSpec("run", "Run a command.", effect="exec")])
    renderer.show_approval(ToolCall("c1", "run", "{}"), "make", "make\nmake install", "why", "not sandboxed")
    renderer.show_approval(ToolCall("c2", "shell", "{}"), "ls", "ls", "why", "not sandboxed")  # not among its tools
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["      $ make", "        make install", "      not sandboxed"]
    assert "$ ls" not in out.getvalue() and out.getvalue().count("not sandboxed") == 1


def test_policy_check_judges_a_link_as_the_run_does(run_loop, tmp_path: Path):
    """`loop policy check` builds its policy as a run does (policy_for): with the real-path resolver, so a
    link to a disk made by an earlier call is judged where it leads (it said allow before)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "disk").symlink_to("/dev/sda")
    checked = run_loop("policy", "check", "-C", str(ws), "--approval", "all", "--sandbox", "off",
                       "dd if=/dev/zero of=disk", timeout=30)
    assert checked.returncode == 4, checked.stdout + checked.stderr
    assert checked.stdout.startswith("deny") and "a link out of the workspace" in checked.stdout
