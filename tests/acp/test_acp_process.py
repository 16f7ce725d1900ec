"""The real `loop acp` entry point in a subprocess, driven by the SDK's client: nothing but protocol on its
stdout (every line checked by the harness; diagnostics on stderr and in $LOOP_HOME/logs/), and the client's
stdio MCP server joining the run."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

from acp import schema

from tests.acp.harness import subprocess_agent, until
from tests.acp.test_cancel import running
from tests.conftest import where_shells_run
from tests.fakeserver import FakeServer, text, tools

SLEEP = "sleep 28.3"
# bench/'s MCP server without the SDK: it starts in milliseconds (tests/mcp/ covers the SDK's servers)
MCP_SERVER = str(Path(__file__).resolve().parent.parent.parent / "bench" / "tinymcp.py")


def test_the_clients_mcp_server_joins_and_only_protocol_is_on_stdout(
        server: FakeServer, workspace: Path, loop_home: Path) -> None:
    # a project file that tries to loosen the mode: ignored, with a warning, which must not reach stdout
    (workspace / ".loop").mkdir()
    (workspace / ".loop" / "config.json").write_text(json.dumps({"approval": "all"}))
    server.add(tools(("mcp__notes__read_note", {"name": "groceries"})), text("Milk."),
               tools(("shell", {"command": SLEEP})), text("never"))

    async def main() -> None:
        async with subprocess_agent(loop_home, "--base-url", server.url, "--ctx-size", "16384",
                                    *where_shells_run()) as (conn, client, validator, process):
            await conn.initialize(protocol_version=1)
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[schema.McpServerStdio(
                name="notes", command=sys.executable, args=[MCP_SERVER],
                env=[schema.EnvVariable(name="STARTUP_NAP", value="0")])])
            assert new.modes.current_mode_id == "edits"
            client.answers = ["allow_once"]
            answer = await conn.prompt(session_id=new.session_id,
                                       prompt=[schema.TextContentBlock(type="text", text="what to buy?")])
            assert answer.stop_reason == "end_turn"
            (call,) = client.calls()[:1]
            assert call.kind == "other"
            assert client.progress(call.tool_call_id)[-1].status == "completed"
            assert "buy milk" in client.progress(call.tool_call_id)[-1].content[0].content.text
            assert validator.count > 5
            # SIGTERM while a command runs: the turn ends as with Ctrl+C, nothing is left running, exit 143
            client.answers = ["allow_once"]
            turn = asyncio.create_task(conn.prompt(session_id=new.session_id,
                                                   prompt=[schema.TextContentBlock(type="text", text="wait")]))
            await until(lambda: bool(running(SLEEP)) or turn.done())
            process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(process.wait(), 20) == 143
            await asyncio.gather(turn, return_exceptions=True)
            assert not running(SLEEP)

    asyncio.run(asyncio.wait_for(main(), 90))
    stderr = (loop_home / "acp-stderr.txt").read_text()
    assert "ignored \"approval\"" in stderr  # diagnostics on stderr; every stdout line was JSON-RPC (harness)
    assert "ignored \"approval\"" in (loop_home / "logs" / "acp.log").read_text()  # and in the log


def test_stdio_from_and_to_files(workspace: Path, loop_home: Path, tmp_path: Path) -> None:
    """Started by hand with files (or /dev/null) instead of pipes, it still answers and ends at EOF."""
    import subprocess

    from tests.conftest import clean_env

    given, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    given.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
                     + "\n")
    with given.open("rb") as stdin, out.open("wb") as stdout:
        done = subprocess.run([sys.executable, "-m", "loopagent", "acp"], stdin=stdin, stdout=stdout,
                              stderr=subprocess.PIPE, env=clean_env(loop_home), timeout=60)
    assert done.returncode == 0, done.stderr
    (answer,) = [json.loads(line) for line in out.read_text().splitlines()]
    schema.InitializeResponse.model_validate(answer["result"])
