"""Issue 10's attacks through a scripted headless run with real bash: the canaries must survive.

`--sandbox off` keeps the real sandbox out of it, so only the policy stands in the way: a policy
bug here would really create `pwned.txt` or delete the directory above the workspace (both
inside the test's own temporary directory).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopagent.loop import HEADLESS_DENIAL
from tests.fakeserver import text, tools

BYPASSES_OF_CAT = [  # each passed an allow rule `cat *` in mode edits before
    "cat README.md ~$(touch pwned.txt)",
    "cat README.md ~`touch pwned.txt`",
    "BASH_ENV=evil.sh bash -c 'cat README.md'",
    "bash --rcfile evil.sh -i -c 'cat README.md'",
]
PARENT_KILLERS = [  # each deleted the workspace's parent in mode all before
    'p=..; rm -rf "$p"',
    'rm -rf "${PWD%/*}"',
    "echo .. | xargs rm -rf",
    "find .. -maxdepth 0 -exec rm -rf {} +",
    "{rm,-rf,..}",
    'f(){ rm -rf "$1"; }; f ..',
    "git -c alias.x='!rm -rf ..' x",
    "python3 -c 'import shutil; shutil.rmtree(\"..\")'",
    "bash <<EOF\nrm -rf ..\nEOF",
    "python3 - <<'EOF'\nimport shutil; shutil.rmtree('..')\nEOF",
    "true ~$(rm -rf ..)",
]


@pytest.fixture
def layout(tmp_path: Path, loop_home: Path):
    """parent/{canary.txt, ws/{README.md, evil.sh}}; the user file allows `cat *`."""
    parent = tmp_path / "parent"
    ws = parent / "ws"
    ws.mkdir(parents=True)
    (parent / "canary.txt").write_text("must survive\n")
    (ws / "README.md").write_text("hello\n")
    (ws / "evil.sh").write_text("touch pwned.txt\n")
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps({"allow": ["cat *"]}) + "\n")
    return parent, ws


def run(run_loop, server, ws: Path, mode: str, commands: list[str]):
    server.add(tools(*[("shell", {"command": c}) for c in commands]), text("done"))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--no-checkpoints",
                    "--sandbox", "off", "--approval", mode, "do the task", cwd=ws, timeout=60)
    results = [m for m in server.requests[1]["messages"] if m["role"] == "tool"] if len(server.requests) > 1 else []
    return proc, results


def test_allow_rule_for_cat_runs_no_hidden_command(run_loop, server, layout):
    parent, ws = layout
    proc, results = run(run_loop, server, ws, "edits", BYPASSES_OF_CAT)
    assert proc.returncode == 4, proc.stderr  # the calls needed approval; headless denies them
    assert json.loads(proc.stdout.splitlines()[-1])["status"] == "approval_required"
    assert len(results) == len(BYPASSES_OF_CAT)
    assert all(r["content"].startswith(HEADLESS_DENIAL) for r in results), results
    assert not (ws / "pwned.txt").exists()


def test_mode_all_never_deletes_the_parent(run_loop, server, layout):
    parent, ws = layout
    proc, results = run(run_loop, server, ws, "all", PARENT_KILLERS)
    assert (parent / "canary.txt").read_text() == "must survive\n"
    assert not (ws / "pwned.txt").exists()
    assert len(results) == len(PARENT_KILLERS)
    for command, result in zip(PARENT_KILLERS, results, strict=True):
        assert result["content"].startswith(("denied by policy", HEADLESS_DENIAL)), (command, result)
    assert proc.returncode == 4


def test_mode_all_still_runs_plain_commands(run_loop, server, layout):
    parent, ws = layout
    proc, results = run(run_loop, server, ws, "all", ["cat README.md", "exec >&- 2>&-", "ls 2>&-"])
    assert proc.returncode == 0, proc.stderr
    assert "hello" in results[0]["content"]
    assert not any(r["content"].startswith("denied") for r in results)
