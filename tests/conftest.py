"""Shared fixtures: a clean environment, a temporary LOOP_HOME, the fake server, the real CLI."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from subprocess import CompletedProcess
from subprocess import run as subprocess_run

import pytest

from tests.fakeserver import FakeServer
from tests.inprocess import needs_process, run_in_process

# LOOP_TEST_SUBPROCESS=1: every run_loop call in a process of its own, as before tests/inprocess.py
IN_SUBPROCESS = os.environ.get("LOOP_TEST_SUBPROCESS") == "1"
SAMPLE = Path(__file__).resolve().parent.parent / "loopagent" / "demo" / "sample"


def pytest_configure(config: pytest.Config) -> None:
    """Compile the package once, in the controller: the suite starts `loop` about 600 times with
    PYTHONDONTWRITEBYTECODE=1 (clean_env, and often the machine), so without the cached bytecode every
    start compiles ~150 modules from source (~0.1 s of CPU each time)."""
    # Every worker and the controller collect all test modules; under PYTHONDONTWRITEBYTECODE pytest
    # rewrites their asserts from source each time (~5 s of CPU per process): keep its cache (in
    # __pycache__, git-ignored). The `loop` processes tests start still get the variable (clean_env).
    sys.dont_write_bytecode = False
    if hasattr(config, "workerinput"):
        return
    import compileall
    import re

    # Not the demo's sample: tests copy it as a workspace, which must hold only its own files.
    compileall.compile_dir(str(Path(__file__).resolve().parent.parent / "loopagent"), quiet=2,
                           rx=re.compile(r"[/\\]demo[/\\]sample[/\\]"))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than there are cores (most tests wait on a `loop` subprocess, a server or
    a pty, so one per core leaves CPU idle; on 2 cores 3 workers beat 2 and 4), at most 4 (--maxprocesses)."""
    return 1 + (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def wait_for(condition, timeout: float = 20) -> None:
    """Poll `condition` until it holds (a file a command wrote, a request the server got); fail at `timeout`."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


def where_shells_run() -> list[str]:
    """`--sandbox off` where bubblewrap cannot run, else nothing: tests not about the sandbox run
    sandboxed where they can (so its walls meet real work) and still pass on a machine without it."""
    from loopagent.sandbox.probe import probe

    return [] if probe(os.environ.get("PATH")).works else ["--sandbox", "off"]


def clean_env(home: Path) -> dict[str, str]:
    """The process environment without LOOP_*/OPENAI_* variables, with a private LOOP_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOP_", "OPENAI_"))}
    env["LOOP_HOME"] = str(home)
    env["NO_COLOR"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # No language server found on PATH (an activated venv has pylsp) starts in every run that edits
    # code; tests/lsp/ turn diagnostics on (LOOP_LSP="": the setting's own default).
    env["LOOP_LSP"] = "false"
    return env


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("LOOP_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("LOOP_HOME", str(tmp_path / "loop-home"))


@pytest.fixture
def loop_home(tmp_path: Path) -> Path:
    return tmp_path / "loop-home"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A fresh copy of the demo's sample repository (1 failing test, 3 passing)."""
    ws = tmp_path / "sample"
    shutil.copytree(SAMPLE, ws)
    return ws


@pytest.fixture
def run_loop(loop_home: Path):
    """Run the real `loop` entry point; returns a CompletedProcess. In this process by default
    (tests/inprocess.py); `subprocess=True` for what only a process of its own shows (signals, exit-time
    hooks, what is left running, the streams as file descriptors)."""

    def run(*args: str, cwd: Path | None = None, input: str | None = None, timeout: float = 60,
            env: dict[str, str] | None = None, subprocess: bool = False) -> CompletedProcess[str]:
        full_env = clean_env(loop_home)
        full_env.update(env or {})
        if not (subprocess or IN_SUBPROCESS or needs_process(list(args), full_env)):
            return run_in_process(list(args), cwd, input or "", full_env)
        return subprocess_run(
            [sys.executable, "-m", "loopagent", *args], cwd=cwd, input=input if input is not None else "",
            capture_output=True, text=True, timeout=timeout, env=full_env,
        )

    return run


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace holding one file, a.txt ("hello")."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    return ws


@pytest.fixture
def terminal(server, workspace: Path, loop_home: Path) -> Iterator:
    """`start(*args)`: `loop agent -C workspace --base-url server …` on a real pty (tests/pty.py)."""
    from tests.pty import terminals

    yield from terminals(server, workspace, loop_home)


@pytest.fixture
def term(terminal) -> Iterator:
    """Like `terminal`, but each start waits for the REPL's prompt."""
    import functools

    yield functools.partial(terminal, wait_prompt=True)
