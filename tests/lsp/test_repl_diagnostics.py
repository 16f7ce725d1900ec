"""In the REPL on a real pty: the block shows under the edit's diff and reaches the model's next request;
the language server ends with the session."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import clean_env
from tests.fakeserver import text, tools
from tests.pty import TOOLBAR, Terminal

VENV_BIN = str(Path(sys.executable).parent)


def test_the_repl_shows_the_new_error_and_sends_it_to_the_model(server, workspace, loop_home):
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps({"lsp": {"python": {"command": ["pylsp"]}}}))
    server.add(tools(("write_file", {"path": "calc.py", "content": "def area(r):\n    return pi * r * r\n"})),
               text("written"))
    env = {**clean_env(loop_home), "LOOP_LSP": "", "TERM": "xterm", "COLUMNS": "120", "LINES": "40"}
    env["PATH"] = f"{VENV_BIN}:{env['PATH']}"
    t = Terminal(["agent", "-C", str(workspace), "--base-url", server.url], env, workspace)
    try:
        t.prompt()
        t.line("write calc.py")
        out = t.expect("done: completed", timeout=40)
        assert "+    return pi * r * r" in out and "1 new error:" in out
        assert out.index("1 new error:") > out.index("+    return pi * r * r")  # under the diff
        assert "calc.py:2:12 undefined name 'pi'" in out
        sent = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
        assert sent == ["created calc.py: new file, 2 lines\n\n1 new error:\ncalc.py:2:12 undefined name 'pi'"]
        t.expect(TOOLBAR)
        t.child.sendcontrol("d")
        assert t.exit_code() == 0
    finally:
        t.child.close(force=True)
