"""spawn: children loop starts outside the sandbox die with loop and import nothing from the workspace."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from loopagent.spawn import python_argv, safe_env
from tests.conftest import wait_for


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_a_child_started_with_die_with_loop_ends_when_its_parent_is_sigkilled():
    code = ("import subprocess; from loopagent.spawn import die_with_loop; "
            "p = subprocess.Popen(['sleep', '60'], preexec_fn=die_with_loop()); print(p.pid, flush=True); p.wait()")
    plain = ("import subprocess; p = subprocess.Popen(['sleep', '60']); print(p.pid, flush=True); p.wait()")
    pids = []
    for source in (plain, code):
        middle = subprocess.Popen([sys.executable, "-c", source], stdout=subprocess.PIPE, text=True)
        pids.append(int(middle.stdout.readline()))
        os.kill(middle.pid, signal.SIGKILL)
        middle.wait(timeout=10)
        middle.stdout.close()
    try:
        wait_for(lambda: not alive(pids[1]), timeout=10)
        assert alive(pids[0])  # without it the orphan lives on: the test can tell the difference
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_python_started_safely_in_the_workspace_does_not_import_its_modules(tmp_path: Path):
    (tmp_path / "json.py").write_text("raise SystemExit('PLANTED')\n")
    argv = ["-c", "import json; print('clean')"]
    planted = subprocess.run([sys.executable, *argv], cwd=tmp_path, capture_output=True, text=True, timeout=30,
                             env={k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"})
    assert "PLANTED" in planted.stderr  # the attack works on a plain interpreter
    for run_argv, env in ((python_argv(*argv), None), ([sys.executable, *argv], safe_env())):
        done = subprocess.run(run_argv, cwd=tmp_path, capture_output=True, text=True, timeout=30, env=env)
        assert done.stdout.strip() == "clean", done.stderr
