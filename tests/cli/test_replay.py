"""`loop replay SESSION`: a live run's session run again with the real tools, compared call by call."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

from tests.conftest import where_shells_run
from tests.fakeserver import text, tools

CHECK = """\
import time
t = time.perf_counter()
from calc import add
label = open("label.txt").read().strip()
ok = add(2, 3) == 5
print(f"{label}: {'pass' if ok else 'FAIL'} (took {time.perf_counter() - t:.6f}s)")
raise SystemExit(0 if ok else 1)
"""


def git(ws: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True, timeout=30,
                   env={"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin",
                        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


def buggy(ws: Path) -> Path:
    """A git repository whose check fails until calc.add is fixed."""
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (ws / "check.py").write_text(CHECK)
    (ws / "label.txt").write_text("calc\n")
    git(ws, "init", "-q")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "buggy")
    return ws


def script(server) -> None:
    server.add(
        tools(("read_file", {"path": "calc.py"}), ("shell", {"command": "git rev-parse --is-inside-work-tree"})),
        tools(("shell", {"command": "python3 check.py"})),
        tools(("edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})),
        tools(("shell", {"command": "python3 check.py"})),
        text("Fixed: add() now adds."),
    )


def replay_here(monkeypatch, capsys, cwd: Path, *args: str) -> tuple[int, str, str]:
    """`loop replay ARGS` in this process (the real command, without a second interpreter's start-up)."""
    from loopagent.cli.app import app

    monkeypatch.chdir(cwd)
    capsys.readouterr()
    code = app(["replay", *args], prog_name="loop", standalone_mode=False)
    out, err = capsys.readouterr()
    return code, out, err


def test_record_then_replay(server, run_loop, loop_home: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    ws = buggy(tmp_path / "app")
    pristine = tmp_path / "pristine"
    shutil.copytree(ws, pristine)
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps({"sandbox": "off"} if where_shells_run() else {}))
    script(server)
    # --approval all on the command line only: the replay must take the mode from the session's header
    live = run_loop("agent", "--json", "-C", str(ws), "--base-url", server.url, "--approval", "all", "fix add",
                    timeout=60)
    assert live.returncode == 0, live.stderr
    assert "a + b" in (ws / "calc.py").read_text()
    (ws / "calc.py").write_text("def add(a, b):\n    return 5\n")  # the live workspace moves on after the run
    asked = len(server.requests)
    kept = sorted((loop_home / "sessions").rglob("*"))  # a replay records nothing of its own

    # From the first checkpoint: the buggy state comes back, so the first check fails again as recorded;
    # --strict: the same text too, once the check's own timing is masked.
    same = run_loop("replay", "last", "--strict", cwd=ws, timeout=60)
    assert same.returncode == 0, same.stdout + same.stderr
    lines = [line.split() for line in same.stdout.splitlines()]
    assert lines[0] == ["#", "tool", "call", "recorded", "now", "verdict"]
    assert [r[:2] for r in lines[1:6]] == [["1", "read_file"], ["2", "shell"], ["3", "shell"], ["4", "edit_file"],
                                           ["5", "shell"]]
    assert lines[2][-5:] == ["exit", "0", "exit", "0", "same"]  # git finds the repository in the copy
    assert lines[3][-5:] == ["exit", "1", "exit", "1", "same"] and lines[5][-5:] == ["exit", "0", "exit", "0", "same"]
    assert same.stdout.splitlines()[-1] == "replay: all 5 calls have the recorded outcome"
    assert len(server.requests) == asked  # the turns came from the session, not the server
    assert (ws / "calc.py").read_text() == "def add(a, b):\n    return 5\n"  # the live workspace untouched

    # A copy whose source already adds: call 3 now exits 0 where the recording exited 1.
    fixed = tmp_path / "fixed"
    shutil.copytree(pristine, fixed)
    (fixed / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    diverged = run_loop("replay", "last", "-C", str(fixed), cwd=ws, timeout=60)
    assert diverged.returncode == 1, diverged.stdout + diverged.stderr
    verdict = diverged.stdout.splitlines()[-1]
    assert verdict.startswith("replay: call 3 (shell python3 check.py) diverges: recorded exit 1, now exit 0")

    # Same exit codes, other output: only --strict tells.
    relabelled = tmp_path / "relabelled"
    shutil.copytree(pristine, relabelled)
    (relabelled / "label.txt").write_text("renamed\n")
    code, out, err = replay_here(monkeypatch, capsys, ws, "last", "-C", str(relabelled))
    assert code == 0, out + err
    code, out, err = replay_here(monkeypatch, capsys, ws, "last", "-C", str(relabelled), "--strict")
    assert code == 1, out + err
    verdict = out.splitlines()[-1]
    assert verdict.startswith("replay: call 3 (shell python3 check.py) diverges: result text differs")
    assert "renamed: FAIL" in verdict
    assert sorted((loop_home / "sessions").rglob("*")) == kept

    # --replay SESSION_FILE: the session's assistant messages as the model's turns, on a fresh copy.
    from loopagent.run.build import Host
    from loopagent.run.launch import run_agent
    from loopagent.run.spec import Flags, RunSpec
    from tests.conftest import clean_env

    session = next((loop_home / "sessions").rglob("*.jsonl"))
    again = tmp_path / "again"
    shutil.copytree(pristine, again)
    host = Host(env=clean_env(loop_home), home=loop_home, cwd=again, out=io.StringIO(), err=io.StringIO())
    opts = RunSpec("fix add", again, flags=Flags(approval="all"), json=True, replay=session)
    assert run_agent(opts, host=host) == 0, host.err.getvalue()
    assert "a + b" in (again / "calc.py").read_text()
    assert len(server.requests) == asked


def test_bad_session_is_one_line(run_loop, tmp_path: Path, monkeypatch, capsys) -> None:
    ws = tmp_path / "empty"
    ws.mkdir()
    missing = run_loop("replay", "nosuch", cwd=ws, timeout=30)
    assert missing.returncode == 2, missing.stderr
    assert missing.stderr.count("\n") == 1 and missing.stderr.startswith("loop: no saved sessions")
    not_a_session = tmp_path / "x.jsonl"
    not_a_session.write_text("{}\n")
    code, out, err = replay_here(monkeypatch, capsys, ws, str(not_a_session))
    assert code == 2 and out == "" and err.count("\n") == 1 and "not a session header" in err
    code, out, err = replay_here(monkeypatch, capsys, ws, str(not_a_session), "-C", str(tmp_path / "nowhere"))
    assert code == 2 and "is not a directory" in err
