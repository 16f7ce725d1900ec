"""Path rules of the file tools on the real path (symlinks resolved by the real Workspace), and rule names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loopagent.policy import Policy, Rule
from loopagent.tools.workspace import Workspace

RULES = [Rule("deny", "read_file(.env)", "t"), Rule("deny", "read_file(secrets/*)", "t"),
         Rule("allow", "write_file(docs/*)", "t"), Rule("allow", "read_file(shared/*)", "t")]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / ".env").write_text("KEY=1\n")
    (root / "link-to-env").symlink_to(root / ".env")
    (root / "docs" / "env").symlink_to(root / ".env")
    (root / "docs" / "src").symlink_to(root / "sub")
    (root / "outside").symlink_to(tmp_path)
    return Workspace(root)


def policy(ws: Workspace, mode: str = "ask") -> Policy:
    return Policy(mode, RULES, ws.root, resolve=ws.real_rel)


@pytest.mark.parametrize("path", [".env", "./.env", "sub/../.env", "link-to-env", "docs/env", "{root}/.env"])
def test_a_deny_rule_stops_every_spelling_of_the_path(ws, path):
    path = path.format(root=ws.root)
    for tool in ("read_file", "grep", "list_files"):
        decision = policy(ws).decide(tool, {"path": path, "pattern": "KEY"}, True)
        assert decision.verdict == "deny", (tool, path, decision)
        assert 'deny "read_file(.env)"' in decision.rule


def test_other_paths_are_read(ws):
    assert policy(ws).decide("read_file", {"path": "sub/a.py"}, True).verdict == "allow"
    assert policy(ws).decide("grep", {"pattern": ".env"}, True).verdict == "allow"  # no path: the whole tree


def test_a_symlink_never_widens_an_allow_rule(ws):
    p = policy(ws)
    assert p.decide("write_file", {"path": "docs/guide.md", "content": ""}, False).verdict == "allow"
    # docs/src is a link to sub/: the literal path matches docs/*, the real one does not
    assert p.decide("write_file", {"path": "docs/src/a.py", "content": ""}, False).verdict == "ask"
    assert p.decide("write_file", {"path": "sub/../docs/x.md", "content": ""}, False).verdict == "allow"


def test_a_resolver_that_fails_on_model_input_asks(ws):
    def broken(path: str) -> str | None:
        raise OSError("boom")

    p = Policy("ask", RULES, ws.root, resolve=broken)
    assert p.decide("write_file", {"path": "docs/x.md", "content": ""}, False).verdict == "ask"
    assert p.decide("read_file", {"path": ".env"}, True).verdict == "deny"  # the literal path still matches


def test_may_read_and_explicitly_allows(ws):
    p = policy(ws)
    assert not p.may_read(".env") and not p.may_read("secrets/key.pem") and p.may_read("src/a.py")
    assert p.explicitly_allows("read_file", "shared/data.txt")
    assert not p.explicitly_allows("read_file", "src/a.py")
    assert not p.explicitly_allows("write_file", "shared/data.txt")
    assert not Policy("ask", [Rule("deny", "grep(*.log)")], ws.root).may_read("build.log")


def test_tool_rules_accept_mcp_names_and_never_become_shell_rules(ws):
    rules = [Rule("deny", "mcp__github__delete_repo(*)"), Rule("deny", "github-mcp.delete_repo(*)"),
             Rule("allow", "mcp__github__list_*"), Rule("deny", "Some-Tool.v2(x*)")]
    p = Policy("ask", rules, ws.root)
    assert [r.tool for r in rules] == ["mcp__github__delete_repo", "github-mcp.delete_repo",
                                       "mcp__github__list_*", "Some-Tool.v2"]
    assert p.decide("mcp__github__delete_repo", {"repo": "x"}, False).verdict == "deny"
    assert p.decide("github-mcp.delete_repo", {}, False).verdict == "deny"
    assert p.decide("mcp__github__list_issues", {}, False).verdict == "allow"
    assert p.decide("mcp__github__create_issue", {}, False).verdict == "ask"
    # none of them is a shell rule: a shell command spelled like them is judged as usual
    assert p.check("Some-Tool.v2(x)").verdict == "ask" and p.check("mcp__github__list_x").verdict == "ask"
    assert Policy("all", rules, ws.root).check("mcp__github__delete_repo").verdict == "allow"


def test_policy_constructor_takes_the_sandbox_state(ws):
    p = Policy("all", (), ws.root, sandbox="unavailable", sandbox_problem="bwrap is not installed")
    decision = p.check("ls")
    assert decision.verdict == "ask" and "bwrap is not installed" in decision.reason
    assert "--sandbox off" in decision.reason
    assert p.check("sudo id").verdict == "deny"  # built-in denies still deny
    assert Policy("all", (), ws.root, sandbox="sandboxed").check("python3 -c 'print(1)'").verdict == "allow"
    assert Policy("all", (), ws.root).check("python3 -c 'print(1)'").verdict == "ask"  # default "off"
    with pytest.raises(ValueError, match="sandboxed, off, unavailable"):
        Policy("all", (), ws.root, sandbox="maybe")


def test_real_rel_is_what_the_policy_is_given(ws):
    assert ws.real_rel("docs/env") == ".env" and ws.real_rel("outside/x") is None
    assert os.path.islink(ws.root / "link-to-env")
