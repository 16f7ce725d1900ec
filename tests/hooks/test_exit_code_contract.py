"""hooks.py on its own: the setting's shape and the exit-code contract, with real commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopagent.cancel import Cancel
from loopagent.hooks import Hook, check_hooks, run_hook


@pytest.mark.parametrize("value, said", [
    ({"pre_tools": []}, "unknown hook event 'pre_tools'"),
    ({"stop": {"command": "x"}}, "stop: must be a list"),
    ({"pre_tool": [{"match": "("}]}, 'pre_tool[0]: needs a "command"'),
    ({"pre_tool": [{"command": "x", "match": "("}]}, "not a regular expression"),
    ({"pre_tool": [{"command": "x", "timeout": 0}]}, "timeout must be a positive"),
    ({"pre_tool": [{"command": "x", "on_error": "ignore"}]}, "on_error must be"),
    ({"pre_tool": [{"command": "x", "matcher": "shell"}]}, "unknown key 'matcher'"),
])
def test_a_bad_setting_says_what_is_wrong(value, said):
    with pytest.raises(ValueError, match=said.replace("[", r"\[").replace("(", r"\(")):
        check_hooks(value)


def run(command: str, tmp_path: Path, kind: str = "pre_tool", **kw):
    return run_hook(Hook(kind, command, **kw), {"event": kind}, tmp_path, {"PATH": "/usr/bin:/bin"}, Cancel())


@pytest.mark.parametrize("command, verdict, reason", [
    ("exit 0", "ok", ""),
    ("echo not json", "ok", ""),
    ("echo '{\"decision\": \"block\", \"reason\": \"nope\"}'", "block", "nope"),
    ("echo '{\"decision\": \"block\"'", "ok", ""),  # broken JSON on exit 0 proceeds
    ("echo why >&2; exit 2", "block", "why"),
    ("exit 2", "block", "no reason given"),
    ("echo boom >&2; exit 1", "failed", "exit status 1: boom"),
    ("/nonexistent/hook", "failed", "exit status 127"),
])
def test_the_exit_code_contract(command, verdict, reason, tmp_path):
    outcome = run(command, tmp_path)
    assert outcome.verdict == verdict
    assert outcome.reason.startswith(reason)


def test_a_timeout_fails_open_unless_on_error_block(tmp_path):
    assert run("sleep 20", tmp_path, timeout=0.2).verdict == "failed"
    closed = run("sleep 20", tmp_path, timeout=0.2, on_error="block")
    assert closed.verdict == "block" and "timed out after 0.2 s" in closed.reason


def test_post_tool_plain_stdout_is_context(tmp_path):
    assert run("echo 3 files formatted", tmp_path, kind="post_tool").context == "3 files formatted"
    assert run("echo '{\"context\": \"c\"}'", tmp_path, kind="post_tool").context == "c"
