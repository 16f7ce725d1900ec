"""Policy rules name tools by [A-Za-z0-9_-] names (MCP ones included); a rule shaped like no tool name is
a load error naming the rule and its source, never silently a shell rule (tests/policy/test_rules_for_future_tools.py:
one about a tool that does not exist now is only a note)."""

from __future__ import annotations

import json

import pytest

from loopagent.config import load_config
from loopagent.errors import PolicyError, UsageError
from loopagent.policy import Policy, Rule
from loopagent.policy.rules import check_rules
from loopagent.tools import Registry, default_tools

KNOWN = [*Registry(default_tools()).tools, "mcp__github__delete_repo", "mcp__github__list-issues"]


def test_an_unknown_tool_in_a_user_file_rule_is_a_load_error_naming_file_and_line(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"deny": ["rm -rf *", "github-mcp.delete_repo(*)"]}, indent=2))
    config = load_config(tmp_path, {}, {"LOOP_HOME": str(home)})
    with pytest.raises(PolicyError) as caught:
        check_rules(config.rules)
    message = str(caught.value)
    assert message.startswith(f'user file {home / "config.json"} line 4: deny "github-mcp.delete_repo(*)": '
                              "no tool can be named 'github-mcp.delete_repo'")
    assert "\n" not in message and "mcp__<server>__<tool>" in message
    assert isinstance(caught.value, UsageError) and caught.value.exit_code == 2


@pytest.mark.parametrize("text", ["frobnicate(*)", "mcp__github__delete_rep", "mcp__gitlab__*(x)", "Read_file(x)"])
def test_rules_about_tools_that_do_not_exist_load_and_are_unmatched(text):
    rule = Rule("deny", text, "--deny")
    rule.check()  # the shape is fine: such a tool may exist later
    assert rule.unmatched(KNOWN) and rule.tool != "shell"


@pytest.mark.parametrize("text", ["git push *", "shell(git push *)", "write_file", "read_file(.env)",
                                  "mcp__github__delete_repo", "mcp__github__delete_repo(*)",
                                  "mcp__github__list-issues(*)", "mcp__github__*", "*(secret/*)"])
def test_rules_about_known_tools_and_shell_patterns_pass(text):
    rule = Rule("deny", text)
    rule.check()
    assert not rule.unmatched(KNOWN)
    assert rule.tool == "*" or rule.tool in KNOWN or rule.tool.startswith("mcp__github__")


def test_rules_for_a_configured_mcp_server_match_before_its_tools_are_listed():
    assert not Rule("deny", "mcp__jira__delete_issue(*)").unmatched(["shell"], prefixes=["mcp__jira__"])
    assert not Rule("deny", "mcp__*").unmatched(["shell"], prefixes=["mcp__jira__"])
    assert Rule("deny", "mcp__confluence__x").unmatched(["shell"], prefixes=["mcp__jira__"])


def test_a_deny_rule_on_an_mcp_tool_denies_it_even_in_mode_all():
    for text in ("mcp__github__delete_repo(*)", "mcp__github__delete_repo", "mcp__github__*"):
        rule = Rule("deny", text, "test")
        assert rule.tool != "shell"
        decision = Policy("all", [rule]).decide("mcp__github__delete_repo", {"repo": "me/x"}, False)
        assert decision.verdict == "deny", text
    other = Policy("all", [Rule("deny", "mcp__github__delete_repo")]).decide("mcp__github__list-issues", {}, False)
    assert other.verdict == "allow"
