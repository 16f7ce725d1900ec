"""Language-server diagnostics reach the editor: a write through `loop acp` that breaks a name ends with the
new error in its tool_call_update, as the model gets it (the real pylsp, as tests/lsp/ start it)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from acp import schema

from loopagent.acp.agent import Defaults
from loopagent.run.spec import Flags
from tests.acp.harness import FS, in_process
from tests.fakeserver import FakeServer, text, tools
from tests.lsp.test_diagnostics_e2e import BROKEN, LSP_ON, VENV_BIN, WALLED, tool_texts


def test_a_write_that_breaks_a_name_shows_the_new_error(server: FakeServer, workspace: Path, loop_home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{VENV_BIN}:{os.environ['PATH']}")
    for name, value in LSP_ON.items():
        monkeypatch.setenv(name, value)
    if not WALLED:  # without bubblewrap loop starts only a server the user names
        loop_home.mkdir(parents=True, exist_ok=True)
        (loop_home / "config.json").write_text(json.dumps({"lsp": {"python": {"command": ["pylsp"]}}}))
    server.add(tools(("write_file", {"path": "calc.py", "content": BROKEN})), text("done"))
    block = "1 new error:\ncalc.py:2:12 undefined name 'pi'"

    async def main() -> None:
        async with in_process(Defaults(Flags(base_url=server.url, ctx_size=16384, sandbox=None if WALLED else "off"))
                              ) as (conn, client, _):
            await conn.initialize(protocol_version=1, client_capabilities=FS)  # written to the editor's buffer
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[schema.TextContentBlock(type="text", text="write calc")])
            assert client.writes == [(str(workspace / "calc.py"), BROKEN)]
            (call,) = client.calls()
            done = client.progress(call.tool_call_id)[-1]
            assert done.status == "completed"
            said = done.content[0].content.text
            assert said.startswith("created calc.py") and said.endswith(f"\n\n{block}")
            assert [c.new_text for c in done.content if c.type == "diff"] == [BROKEN]
            assert tool_texts(server.requests[1])[-1].endswith(block)  # what the model got, too

    asyncio.run(asyncio.wait_for(main(), 90))
