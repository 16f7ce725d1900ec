"""Plan mode through the real `loop agent --json` against the fake server, with the real bwrap: the write
that lands in mode all fails in plan mode with the kernel's read-only error, reads still work, and a project
file's plan survives `--approval all` and LOOP_APPROVAL."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from loopagent.sandbox.probe import probe
from tests.fakeserver import text, tools

needs_bwrap = pytest.mark.skipif(not probe(os.environ.get("PATH")).works, reason="no working bwrap here")
# A script the policy cannot see into: only the sandbox can stop what it writes.
ATTACK = "#!/bin/bash\necho pwned > pwned.txt\necho changed >> a.txt\n"
CALLS = (("write_file", {"path": "new.txt", "content": "x"}), ("shell", {"command": "echo x > f.txt"}),
         ("shell", {"command": "./attack.sh"}), ("shell", {"command": "cat a.txt"}), ("grep", {"pattern": "hello"}))


def run_plan(run_loop, server, ws: Path, *extra: str, env: dict | None = None):
    server.add(tools(*CALLS), text("Plan: change a.txt."))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--no-checkpoints", *extra,
                    "plan the change", env=env)
    results = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    return proc, results


@pytest.fixture
def ws(workspace: Path) -> Path:
    (workspace / "attack.sh").write_text(ATTACK)
    (workspace / "attack.sh").chmod(0o755)
    return workspace


@needs_bwrap
def test_plan_mode_reads_but_nothing_it_runs_changes_the_workspace(run_loop, server, ws):
    # The same turn in mode all changes the workspace: the attack is real.
    proc, _ = run_plan(run_loop, server, ws, "--approval", "all")
    assert proc.returncode == 0, proc.stderr
    assert (ws / "pwned.txt").exists() and (ws / "f.txt").exists() and (ws / "new.txt").exists()
    for name in ("pwned.txt", "f.txt", "new.txt"):
        (ws / name).unlink()
    (ws / "a.txt").write_text("hello\n")

    proc, results = run_plan(run_loop, server, ws, "--approval", "plan")
    assert proc.returncode == 0, proc.stderr
    write, echo, attack, cat, grep = results
    assert write.startswith("denied by policy: plan mode is on")
    assert "Read-only file system" in echo and "Read-only file system" in attack
    assert cat.endswith("hello\n") and "a.txt" in grep
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt", "attack.sh"]
    assert (ws / "a.txt").read_text() == "hello\n"
    system = server.requests[-1]["messages"][0]["content"]
    assert "Plan mode is on" in system
    end = json.loads(proc.stdout.splitlines()[-1])
    assert end["type"] == "result" and end["status"] == "completed"


def test_a_project_file_forcing_plan_survives_flags_and_variables(run_loop, server, ws):
    (ws / ".loop").mkdir()
    (ws / ".loop" / "config.json").write_text('{"approval": "plan"}\n')
    proc, results = run_plan(run_loop, server, ws, "--approval", "all", "--sandbox", "off",
                             env={"LOOP_APPROVAL": "all"})
    assert proc.returncode == 0, proc.stderr
    assert "nothing may loosen" in proc.stderr
    write, echo, attack, cat, grep = results
    assert write.startswith("denied by policy: plan mode is on")
    # without the sandbox the policy refuses what it cannot show to be read-only, and runs the rest
    assert echo.startswith("denied by policy") and attack.startswith("denied by policy")
    assert cat.endswith("hello\n") and "a.txt" in grep
    assert not (ws / "pwned.txt").exists() and not (ws / "f.txt").exists() and not (ws / "new.txt").exists()
