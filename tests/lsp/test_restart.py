"""The run's servers over their life: the real pylsp dies and is started again once, then its
language goes without (one notice); a cancelled turn stops the wait at once and says nothing."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from loopagent.lsp.hub import Hub

VENV_BIN = str(Path(sys.executable).parent)
BROKEN = b"def f():\n    return x\n"


def hub_in(root: Path, setting: dict, timeout: float = 10) -> Hub:
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    return Hub(root.resolve(), setting, env, env, timeout=timeout)


def test_a_server_that_dies_is_started_again_once_then_left_off_with_one_notice(tmp_path):
    hub, said = hub_in(tmp_path, {"python": {"command": ["pylsp"]}}), []
    path = (tmp_path / "calc.py").resolve()
    try:
        found = []
        for _ in range(4):
            path.write_bytes(BROKEN)
            found.append(hub.diagnose(path, "calc.py", None, BROKEN, warn=said.append))
            server = hub.slots["python"].server
            if server is not None:
                server.proc.kill()  # the server dies between edits
                server.proc.wait()
        assert found[:2] == ["1 new error:\ncalc.py:2:12 undefined name 'x'"] * 2  # first start, the restart
        assert found[2:] == ["", ""] and hub.slots["python"].broken
        assert len(said) == 1 and said[0].startswith("lsp: pylsp: it died again")
    finally:
        hub.close()


def test_a_cancelled_turn_stops_waiting_on_a_silent_server_and_says_nothing(tmp_path):
    hub, said = hub_in(tmp_path, {"python": {"command": [sys.executable, "-c", "import time; time.sleep(60)"]}}), []
    path = (tmp_path / "a.py").resolve()
    cancelled_at = time.monotonic() + 0.3
    try:
        started = time.monotonic()
        assert hub.diagnose(path, "a.py", None, b"x = 1\n", stop=lambda: time.monotonic() > cancelled_at,
                            warn=said.append) == ""
        assert time.monotonic() - started < 3 and said == []
    finally:
        hub.close()


def test_without_a_sandbox_no_server_starts_found_on_path_or_named(tmp_path):
    """No bwrap on PATH: the run cannot wall a server in, and a server reads the workspace's config (plugins,
    build scripts). pylsp found on PATH and the same pylsp named in the user's lsp setting both stay off,
    each with one notice, and the edit's result carries nothing."""
    env = {**os.environ, "PATH": VENV_BIN}  # pylsp, and no bwrap
    path = (tmp_path / "calc.py").resolve()
    path.write_bytes(BROKEN)
    for setting in ({}, {"python": {"command": ["pylsp"]}}):
        said = []
        hub = Hub(tmp_path.resolve(), setting, env, env, timeout=10)
        try:
            assert hub.diagnose(path, "calc.py", None, BROKEN, warn=said.append) == ""
            assert hub.diagnose(path, "calc.py", BROKEN, BROKEN + b"y = 2\n", warn=said.append) == ""
            assert len(said) == 1 and "not started: no sandbox to run it in" in said[0], said
        finally:
            hub.close()
