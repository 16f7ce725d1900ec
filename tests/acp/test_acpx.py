"""End to end with a real ACP client: acpx (npm) runs `loop acp` headless, approving all and approving
nothing; its NDJSON output shows the text and the tool calls. `.ci/run` installs Node and acpx."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import FakeServer, text, tools

CACHED = Path.home() / ".cache" / "loop-ci" / "acpx" / "node_modules" / ".bin" / "acpx"


def acpx() -> str | None:
    """ACPX_BIN, else the copy .ci/run installs, else one on PATH."""
    for found in (os.environ.get("ACPX_BIN"), str(CACHED) if CACHED.exists() else None, shutil.which("acpx")):
        if found and shutil.which("node"):
            return found
    return None


pytestmark = pytest.mark.skipif(acpx() is None, reason="acpx or node not installed (.ci/run installs both)")


def messages(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def updates(found: list[dict]) -> list[dict]:
    return [m["params"]["update"] for m in found if m.get("method") == "session/update"]


@pytest.mark.parametrize("policy", ["--approve-all", "--deny-all"])
def test_acpx_drives_loop_acp(tmp_path: Path, workspace: Path, loop_home: Path, policy: str) -> None:
    command = "echo hi > b.txt"
    with FakeServer() as server:
        server.add(tools(("read_file", {"path": "a.txt"})), tools(("shell", {"command": command})),
                   text("All done."))
        agent = " ".join([sys.executable, "-m", "loopagent", "acp", "--base-url", server.url, "--ctx-size", "16384",
                          *where_shells_run()])
        env = {**clean_env(loop_home), "HOME": str(tmp_path / "home")}
        done = subprocess.run([acpx(), "--agent", agent, "--cwd", str(workspace), "--format", "json", policy,
                               "exec", "read a.txt, then make b.txt"], capture_output=True, text=True, timeout=120,
                              env=env)
    found = messages(done.stdout)
    shown = updates(found)
    calls = {u["toolCallId"]: u for u in shown if u["sessionUpdate"] == "tool_call"}
    assert [c["title"] for c in calls.values()] == ["Read a.txt", command], done.stderr
    finals = {u["toolCallId"]: u["status"] for u in shown if u["sessionUpdate"] == "tool_call_update"
              and u.get("status") in ("completed", "failed")}
    read_id, shell_id = calls
    # acpx serves reads through fs/read_text_file; --deny-all refuses those too: an error result, not a hang
    assert finals[read_id] == ("completed" if policy == "--approve-all" else "failed")
    asked = [m for m in found if m.get("method") == "session/request_permission"]
    assert [a["params"]["toolCall"]["title"] for a in asked] == [command]  # the read was never asked
    text_ = "".join(u["content"]["text"] for u in shown if u["sessionUpdate"] == "agent_message_chunk")
    assert text_ == "All done."
    if policy == "--approve-all":
        assert finals[shell_id] == "completed" and (workspace / "b.txt").read_text() == "hi\n"
    else:
        assert finals[shell_id] == "failed" and not (workspace / "b.txt").exists()
    assert any(m.get("result", {}).get("stopReason") == "end_turn" for m in found)
