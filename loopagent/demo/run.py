"""Run the recorded repair on a temporary copy of the sample and check it independently."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from importlib import resources
from pathlib import Path

from loopagent.spawn import die_with_loop, python_argv

TIMEOUT = 600.0  # seconds the recorded run may take (it takes about one)
VERDICT = re.compile(r"^(?:=+ )?(\d+ (?:passed|failed).*?)(?: in [\d.]+s)?(?: =+)?$", re.M)


def sample_tests(workspace: Path) -> tuple[int, str]:
    """Run the sample's pytest suite; (exit code, verdict line such as "1 failed, 3 passed")."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "SYSTEMROOT")}
    env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1")
    try:
        run = subprocess.run(
            python_argv("-m", "pytest", "-q", "-p", "no:cacheprovider"),  # -P: nothing of the copy shadows pytest
            cwd=workspace, env=env, capture_output=True, text=True, timeout=120, preexec_fn=die_with_loop(),
        )
    except subprocess.TimeoutExpired:
        return 1, "the sample's tests did not finish within 120 s"
    found = VERDICT.findall(run.stdout)
    return run.returncode, (found[-1] if found else (run.stdout + run.stderr).strip()[-300:])


def demo_sandbox(path: str) -> str:
    """The recorded run is ours, not a stranger's: sandboxed where bwrap works, else unsandboxed."""
    from loopagent.sandbox.probe import probe

    return "workspace-write" if probe(path).works else "off"


def run_demo() -> int:
    """`loop demo`: exit 0 when the recorded run completed and the tests pass afterwards."""
    package = resources.files("loopagent.demo")
    recording = Path(str(package / "recording.json"))
    task = json.loads(recording.read_text(encoding="utf-8"))["task"]
    with tempfile.TemporaryDirectory(prefix="loop-demo-") as tmp:
        workspace = Path(tmp) / "sample"
        shutil.copytree(Path(str(package / "sample")), workspace)
        print("loop demo: a recorded model run on a temporary copy of a bundled sample (no server, no key)")
        print(f"workspace: {workspace}")
        code, verdict = sample_tests(workspace)
        print(f"starting tests: {verdict}")
        print(f"task: {task}\n", flush=True)
        status = replay_run(recording, task, workspace, Path(tmp) / "home")
        code, verdict = sample_tests(workspace)
        print(f"\nindependent final tests: {verdict}")
        print(f"exit code of the run: {status}")
        return 0 if status == 0 and code == 0 else 1


def replay_run(recording: Path, task: str, workspace: Path, home: Path) -> int:
    """The recorded run through `loopagent.run` in this process, as `loop agent --replay` would run it.

    The demo leaves nothing behind: its sessions and checkpoints live in `home`, given to the run in its
    `Host` rather than set in this process's os.environ (which every thread shares).
    """
    from loopagent.run.launch import Host, run_agent
    from loopagent.run.spec import Flags, RunSpec

    # The recorded shell call runs `python -m pytest`: make `python` this interpreter.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    current = Host.current(home)
    host = replace(current, env={**current.env, "LOOP_HOME": str(home), "PATH": path})
    flags = Flags(approval="all", sandbox=demo_sandbox(path), timeout=TIMEOUT)
    spec = RunSpec(task=task, workspace=workspace, flags=flags, replay=recording)
    before = dict(os.environ)
    try:
        return run_agent(spec, host=host)
    finally:  # the checkpoints' GitPython import leaves its git's path there (checkpoint/shadow.py)
        for name in set(os.environ) - set(before):
            del os.environ[name]
        os.environ.update(before)
