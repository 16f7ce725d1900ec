"""`loop eval --api-key`: every run gets the key, in its environment, never on a command line or on disk."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import FakeServer, text

KEY = "sk-eval-canary-7f3a9c2e"


def command_lines_holding(marker: str, part: str = "cmdline") -> list[str]:
    """The command lines (or environments) of live processes that contain `marker` (/proc/PID/cmdline shows
    anyone; /proc/PID/environ the same user, a run's shell call among them)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            line = (proc / part).read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if proc.name.isdigit() and marker in line:
            found.append(line)
    return found


def test_the_key_reaches_every_run_through_its_environment_only(tmp_path: Path, loop_home: Path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "notes.txt").write_text("nothing to do\n")
    suite = tmp_path / "suite.toml"
    suite.write_text('[[task]]\nid = "one"\nprompt = "say done"\nrepo = "repo"\ncheck = "true"\n\n'
                     '[[task]]\nid = "two"\nprompt = "say done"\nrepo = "repo"\ncheck = "true"\n')
    seen: list[list[str]] = []

    def answer(body: dict):
        seen.append(command_lines_holding(KEY) + command_lines_holding(KEY, "environ"))  # while the run is alive
        return text("done")

    out = tmp_path / "out"
    with FakeServer(respond=answer) as server:
        done = subprocess.run(
            [sys.executable, "-m", "loopagent", "eval", str(suite), "--base-url", server.url, "--api-key", KEY,
             "--ctx-size", "16384", "--out", str(out), *where_shells_run()],
            capture_output=True, text=True, timeout=120, env=clean_env(loop_home), stdin=subprocess.DEVNULL)
        auth = [h.get("Authorization") for h in server.headers]
    assert done.returncode == 0, done.stderr + done.stdout
    assert len(seen) == 2 and auth == [f"Bearer {KEY}"] * 2  # each run authenticated
    assert seen == [[], []]  # no process, loop eval's own or a run's worker, held the key in its argv or environ
    assert KEY not in done.stdout + done.stderr
    for path in out.rglob("*"):
        assert not path.is_file() or KEY.encode() not in path.read_bytes(), path
