"""SIGINT while a hook runs: the hook's process group is killed and the run ends aborted, promptly."""

from __future__ import annotations

import json
import os
import signal
import time

from tests.conftest import wait_for, where_shells_run
from tests.fakeserver import text, tools
from tests.loop.test_signals_headless import finish, marked, start


def test_sigint_during_a_slow_pre_tool_hook_kills_it(server, workspace, loop_home, tmp_path):
    started = tmp_path / "hook-started"
    token = f"hook-sleeper-{os.getpid()}"
    hook = tmp_path / "slow.sh"
    hook.write_text(f'#!/bin/sh\ntouch {started}\nexec -a {token} sleep 60\n')
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps(
        {"hooks": {"pre_tool": [{"match": "shell", "command": f"bash {hook}", "timeout": 120}]}}))
    marker = workspace / "ran"
    server.add(tools(("shell", {"command": f"touch {marker}"})), text("should not be asked"))
    proc = start(server, workspace, loop_home, *where_shells_run())
    try:
        wait_for(started.exists)
        wait_for(lambda: bool(marked(token)))
        began = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code, events, err = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 130, err
    assert time.monotonic() - began < 10  # not the hook's 60 s
    assert events[-1]["type"] == "result" and events[-1]["status"] == "aborted"
    assert not marker.exists() and len(server.requests) == 1
    wait_for(lambda: not marked(token), timeout=5)  # nothing of the hook left running
