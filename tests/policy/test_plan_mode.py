"""Approval mode plan, judged in process: file writes refused, MCP tools asked, shell commands let into the
read-only sandbox (or, without one, only the short read-only set), and a project file's plan a floor."""

from __future__ import annotations

import json

import pytest

from loopagent.config import load_config
from loopagent.policy import Policy, stricter
from loopagent.policy.plan import PLAN_REFUSAL
from loopagent.tools.spec import ToolSpec

MCP = ToolSpec("mcp__notes__append", "append a note", effect="external")


def test_file_writes_are_refused_with_a_result_that_says_plan_mode_is_on():
    policy = Policy("plan")
    for tool, args in (("write_file", {"path": "a.txt", "content": "x"}),
                       ("edit_file", {"path": "a.txt", "old": "a", "new": "b"})):
        found = policy.decide(tool, args, read_only=False)
        assert found.verdict == "deny" and "plan mode is on" in found.reason and tool in found.reason
    assert PLAN_REFUSAL.startswith("plan mode is on")


def test_an_allow_rule_does_not_open_a_file_write_in_plan_mode():
    from loopagent.policy import Rule

    policy = Policy("plan", [Rule("allow", "write_file(*)", "test")])
    assert policy.decide("write_file", {"path": "a.txt", "content": "x"}, read_only=False).verdict == "deny"
    assert Policy("edits", [Rule("allow", "write_file(*)", "test")]).decide(
        "write_file", {"path": "a.txt", "content": "x"}, read_only=False).verdict == "allow"


def test_reads_run_and_read_deny_rules_still_hold():
    from loopagent.policy import Rule

    policy = Policy("plan", [Rule("deny", "read_file(.env)", "test")])
    assert policy.decide("read_file", {"path": "a.txt"}, read_only=True).verdict == "allow"
    assert policy.decide("grep", {"pattern": "x"}, read_only=True).verdict == "allow"
    assert policy.decide("read_file", {"path": ".env"}, read_only=True).verdict == "deny"


def test_mcp_tools_are_asked_even_when_mode_all_would_run_them():
    assert Policy("plan", tools=[MCP]).decide(MCP, {}, read_only=False).verdict == "ask"
    assert Policy("all", tools=[MCP]).decide(MCP, {}, read_only=False).verdict == "allow"


@pytest.mark.parametrize("command", ["echo x > f", "rm -rf build", "python -c 'open(\"f\",\"w\")'", "make",
                                     "eval \"$X\"", "cat a.txt"])
def test_in_the_sandbox_shell_commands_run_unasked_the_kernel_keeps_the_workspace_read_only(command):
    found = Policy("plan", sandbox="sandboxed").decide("shell", {"command": command}, read_only=False)
    assert found.verdict == "allow" and "read-only" in found.rule


def test_built_in_deny_rules_hold_in_plan_mode_too():
    found = Policy("plan", sandbox="sandboxed").decide("shell", {"command": "sudo rm -rf /"}, read_only=False)
    assert found.verdict == "deny" and "sudo" in found.reason


READS = ["cat a.txt", "ls -la src", "head -n 5 a.txt | wc -l", "grep -rn TODO .", "rg -n 'def ' src",
         "find . -name '*.py'", "git status", "git log --oneline -5", "git diff HEAD~1", "git show HEAD",
         "tail a.txt 2>/dev/null", "cat < a.txt"]
WRITES = ["echo x > f", "cat a.txt > b.txt", "tee f", "find . -delete", "find . -exec rm {} +",
          "find . -fprint out", "rg --pre ./evil x", "git commit -am x", "git diff --output=f",
          "git -c core.pager=evil log", "sed -i s/a/b/ a.txt", "python3 x.py", "ls; rm a.txt",
          "cat $(echo a.txt)", "LD_PRELOAD=/tmp/x.so cat a.txt", "bash -c 'cat a.txt'", "xargs cat",
          "cat a.txt | sh", "cat 'unterminated"]


@pytest.mark.parametrize("sandbox", ["off", "unavailable"])
def test_without_the_sandbox_only_the_read_only_set_runs(sandbox):
    policy = Policy("plan", sandbox=sandbox)
    for command in READS:
        assert policy.decide("shell", {"command": command}, read_only=False).verdict == "allow", command
    for command in WRITES:
        found = policy.decide("shell", {"command": command}, read_only=False)
        assert found.verdict == "deny", command
        assert "plan mode without the sandbox" in found.reason, command


def test_strictness_and_the_floor_of_a_switch():
    assert stricter("plan", "all") == stricter("all", "plan") == "plan"
    assert stricter("ask", "edits") == "ask"
    policy = Policy("plan", floor="plan")
    assert "may not loosen" in policy.switch("all") and policy.mode == "plan"
    assert policy.switch("plan") == ""
    free = Policy("plan")
    assert free.switch("edits") == "" and free.mode == "edits"
    assert "must be one of" in free.switch("yolo") and free.mode == "edits"


def write_project(ws, data: dict) -> None:
    (ws / ".loop").mkdir(exist_ok=True)
    (ws / ".loop" / "config.json").write_text(json.dumps(data))


def test_a_project_file_may_force_plan_and_no_flag_or_variable_loosens_it(tmp_path):
    write_project(tmp_path, {"approval": "plan"})
    config = load_config(tmp_path, {"approval": "all"}, {"LOOP_HOME": str(tmp_path / "h"), "LOOP_APPROVAL": "edits"})
    assert config.settings.approval == "plan" and config.origins["approval"] == "project"
    assert any("nothing may loosen" in w for w in config.warnings)


def test_a_project_file_moves_only_toward_plan(tmp_path):
    home = {"LOOP_HOME": str(tmp_path / "h")}
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "config.json").write_text('{"approval": "plan"}')
    write_project(tmp_path, {"approval": "ask"})
    config = load_config(tmp_path, {}, home)
    assert config.settings.approval == "plan"  # ask is looser than the user's plan: ignored
    assert any('ignored "approval"' in w for w in config.warnings)
