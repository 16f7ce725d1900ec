"""Rules may name tools that do not exist yet (issue 22 item 2): checked for shape, never against the tools of the moment.

`"allow": ["mcp__notes__read_*"]` with that server in the user file made `loop config`, `loop policy
check` and `loop replay` exit 2 (replay starts no MCP server). A rule shaped like no tool name (a
dot) is still an error; one that matches no tool known now is a note from `loop config` and
`loop policy check`, and applies once such a tool exists.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from loopagent.errors import PolicyError
from loopagent.policy import Policy, Rule
from loopagent.policy.rules import check_rules, unmatched_rules
from tests.conftest import where_shells_run
from tests.fakeserver import text, tools
from tests.mcp.test_mcp_e2e import notes

BUILTIN = ["read_file", "list_files", "grep", "write_file", "edit_file", "shell"]


@pytest.mark.parametrize("text_", ["mcp__acc__read_*", "mcp__acc__read_note(*)", "frobnicate(*)", "lsp_rename(src/*)",
                                   "mcp__*", "git push *", "shell(git push *)", "write_file"])
def test_any_tool_shape_loads(text_):
    check_rules([Rule("allow", text_, "test")])  # raises PolicyError for a shape no tool name has


@pytest.mark.parametrize("text_", ["github-mcp.delete_repo(*)", "Some.Tool(x)"])
def test_a_name_no_tool_can_have_is_still_an_error(text_):
    with pytest.raises(PolicyError, match="no tool can be named .*no dots"):
        check_rules([Rule("deny", text_, "--deny")])


def test_rules_that_match_no_known_tool_are_found_for_a_note():
    rules = [Rule("allow", t) for t in ("mcp__acc__read_*", "mcp__gone__x(*)", "frobnicate(*)", "read_file(x)",
                                        "npm test", "mcp__*")]
    found = unmatched_rules(rules, BUILTIN, ["mcp__acc__"])
    assert [r.text for r in found] == ["mcp__gone__x(*)", "frobnicate(*)"]


def test_a_rule_about_a_later_tool_applies_once_it_exists():
    policy = Policy("ask", [Rule("deny", "lsp_rename(*)"), Rule("allow", "mcp__acc__read_*")], "/w")
    assert policy.decide("lsp_rename", {"path": "a.py"}, False).verdict == "deny"
    assert policy.decide("mcp__acc__read_note", {"name": "x"}, False).verdict == "allow"
    assert policy.decide("mcp__acc__write_note", {"name": "x"}, False).verdict == "ask"


def write_user_file(loop_home: Path, marker: Path) -> None:
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps({
        "mcp_servers": notes(marker), "allow": ["mcp__notes__read_*"], "deny": ["mcp__later__delete_*"]}))


def test_config_policy_check_and_replay_accept_an_mcp_allow_rule(run_loop, server, workspace, loop_home, tmp_path):
    marker = tmp_path / "started"
    write_user_file(loop_home, marker)
    shown = run_loop("config", "-C", str(workspace), timeout=30)
    assert shown.returncode == 0, shown.stderr
    assert "mcp__notes__read_*" in shown.stdout and "mcp__later__delete_*" in shown.stdout
    notes_ = [line for line in shown.stderr.splitlines() if line.startswith("loop: note:")]
    assert len(notes_) == 1 and 'deny "mcp__later__delete_*"' in notes_[0] and "matches no tool" in notes_[0]

    checked = run_loop("policy", "check", "-C", str(workspace), "--approval", "all", "--sandbox", "off", "ls",
                       timeout=30)
    assert checked.returncode == 0 and checked.stdout.startswith("allow"), checked.stderr
    assert 'deny "mcp__later__delete_*"' in checked.stderr and "mcp__notes__read_*" not in checked.stderr

    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True, timeout=30)
    server.add(tools(("mcp__notes__read_note", {"name": "x"})), text("ok"))
    live = run_loop("agent", "-C", str(workspace), "--base-url", server.url, "--json", "--approval", "ask",
                    *where_shells_run(), "read note x", timeout=60)
    assert live.returncode == 0, live.stderr  # mode ask: only the allow rule lets the MCP call run
    results = [json.loads(x) for x in live.stdout.splitlines() if '"tool_result"' in x]
    assert results[0]["content"] == "note x: buy milk"

    replay = run_loop("replay", "last", cwd=workspace, timeout=60)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "no tool" not in replay.stderr
