"""`loop doctor` lists the language servers a run would start, through the real entry point."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.fakeserver import FakeServer, completion, text, tools

READ = ("read_file", {"path": "README.md"})


def test_doctor_lists_the_server_each_language_would_use(run_loop, tmp_path, loop_home):
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps({"lsp": {"go": False, ".lua": {"command": ["no-lua-ls"]}}}))
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    with FakeServer([text("ok"), tools(READ), completion(calls=[READ])], models=["m"]) as srv:
        proc = run_loop("doctor", "-C", str(tmp_path), "--base-url", srv.url, env={"PATH": path, "LOOP_LSP": ""},
                       timeout=60)
    lines = [line.split() for line in proc.stdout.splitlines() if line.startswith("  lsp ")]
    assert ["lsp", "python", "pylsp", "found", "on", "PATH"] in lines, proc.stdout
    assert ["lsp", "go", "-", "off", "in", "the", "lsp", "setting"] in lines
    assert ["lsp", ".lua", "-", "no-lua-ls", "not", "found", "(lsp", "setting)"] in lines
