"""Policy end to end: the real CLI against the fake server, headless, plus `loop policy check`.

Safety net: the loop's PATH holds only a stub `bash` that prints what it was given, so a
policy bug could never run `rm -rf /` for real; the tests would see the stub's output instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopagent.loop import HEADLESS_DENIAL
from tests.fakeserver import text, tools


@pytest.fixture
def stub_path(tmp_path: Path) -> str:
    bin_dir = tmp_path / "stub-bin"
    bin_dir.mkdir()
    stub = bin_dir / "bash"
    stub.write_text('#!/bin/sh\necho "STUB BASH RAN: $*"\n')
    stub.chmod(0o755)
    return str(bin_dir)


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def run_headless(run_loop, server, ws: Path, stub_path: str, *extra: str, **kw):
    return run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--no-checkpoints",
                    *extra, "do the task", env={"PATH": stub_path, **kw.pop("env", {})}, **kw)


def tool_messages(body: dict) -> list[dict]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def test_headless_git_push_needs_approval_exit_4(run_loop, server, sample, stub_path):
    server.add(tools(("shell", {"command": "git push origin main"})), text("I could not push."))
    proc = run_headless(run_loop, server, sample, stub_path, "--approval", "edits")
    assert proc.returncode == 4, proc.stderr
    out = events(proc.stdout)
    assert out[-1]["type"] == "result" and out[-1]["status"] == "approval_required"
    [result] = tool_messages(server.requests[1])
    assert result["content"].startswith(HEADLESS_DENIAL)
    assert "STUB BASH RAN" not in proc.stdout


def test_all_mode_still_denies_root_and_nested_rm(run_loop, server, sample, stub_path):
    server.add(
        tools(("shell", {"command": "sudo rm -rf /"}), ("shell", {"command": 'bash -c "rm -rf /"'}),
              ("shell", {"command": "echo fine"})),
        text("Both were refused."),
    )
    # bwrap is not on the stub PATH: without --sandbox off, mode all would ask for every command
    proc = run_headless(run_loop, server, sample, stub_path, "--approval", "all", "--sandbox", "off")
    assert proc.returncode == 0, proc.stderr
    sudo, nested, fine = tool_messages(server.requests[1])
    assert sudo["content"].startswith("denied by policy") and "sudo" in sudo["content"]
    assert nested["content"].startswith("denied by policy") and "rm -r of /" in nested["content"]
    # the allowed call did run (through the stub), so the denials above are the policy's doing
    assert "STUB BASH RAN: -c echo fine" in fine["content"]
    assert "rm -rf" not in fine["content"]


def test_project_config_cannot_loosen_approval(run_loop, server, sample, stub_path):
    (sample / ".loop").mkdir()
    (sample / ".loop" / "config.json").write_text('{\n  "approval": "all",\n  "max_steps": 5\n}\n')
    server.add(tools(("shell", {"command": "ls"})), text("done"))
    proc = run_headless(run_loop, server, sample, stub_path)
    assert proc.returncode == 4
    warning = [line for line in proc.stderr.splitlines() if '"approval"' in line]
    assert len(warning) == 1 and "config.json line 2" in warning[0] and "ignored" in warning[0]
    assert tool_messages(server.requests[1])[0]["content"].startswith(HEADLESS_DENIAL)


def write_user_config(loop_home: Path, data: dict) -> Path:
    loop_home.mkdir(parents=True, exist_ok=True)
    path = loop_home / "config.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def test_policy_check_names_the_deciding_rule(run_loop, loop_home, sample):
    user = write_user_config(loop_home, {"model": "m", "deny": ["npm publish*"], "allow": ["pytest *"]})
    (sample / ".loop").mkdir()
    (sample / ".loop" / "config.json").write_text('{\n  "deny": [\n    "make deploy*"\n  ]\n}\n')

    proc = run_loop("policy", "check", "-C", str(sample), "npm publish --tag next")
    assert proc.returncode == 4, proc.stderr  # DESIGN: exit 0 allow, 3 ask, 4 deny
    assert proc.stdout.splitlines()[0] == "deny"
    assert f'rule:   user file {user} line 4: deny "npm publish*"' in proc.stdout

    proc = run_loop("policy", "check", "-C", str(sample), "cd x && make deploy")
    assert proc.returncode == 4
    assert proc.stdout.splitlines()[0] == "deny" and "project file" in proc.stdout
    assert 'config.json line 3: deny "make deploy*"' in proc.stdout

    proc = run_loop("policy", "check", "-C", str(sample), "--approval", "all", "r''m -rf /")
    assert proc.stdout.splitlines()[0] == "deny" and "built-in" in proc.stdout

    proc = run_loop("policy", "check", "-C", str(sample), "pytest -q && cat x | sh")
    assert proc.returncode == 3
    assert proc.stdout.splitlines()[0] == "ask" and "headless" in proc.stdout

    proc = run_loop("policy", "check", "-C", str(sample), "pytest -q")
    assert proc.returncode == 0 and proc.stdout.splitlines()[0] == "allow"

    proc = run_loop("policy", "check", "-C", str(sample), "--approval", "sometimes", "ls")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
