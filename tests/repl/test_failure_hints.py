"""The REPL says what to do when the server fails, as one-shot runs do on stderr."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.conftest import clean_env
from tests.pty import Terminal


def test_a_task_against_nothing_listening_ends_with_the_hint_and_the_prompt_returns(tmp_path: Path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    with socket.socket() as closed:  # bound, never listening: refused at once
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        env = clean_env(loop_home)
        env.update(TERM="xterm", COLUMNS="120", LINES="40", LOOP_RETRIES="0")
        t = Terminal(["agent", "-C", str(ws), "--base-url", url, "--ctx-size", "16384"], env, ws)
        try:
            t.prompt()
            t.line("hello")
            shown = t.expect(r"hint: [^\r\n]*loop doctor")
            assert "cannot reach" in shown
            t.prompt()  # still in the REPL
            t.line("/exit")
            assert t.exit_code() == 0
        finally:
            t.child.close(force=True)
