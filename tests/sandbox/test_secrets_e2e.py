"""Secrets end to end: the real `loop` against the fake server, with markers that must appear nowhere.

A scripted shell call reads loop's own /proc environ and cmdline (and every process's, in case
bash's parent is not loop itself) and writes them to a file in the workspace, which is read back
here unredacted: that file shows what the process really exposes, while the tool output shows
what the redactor let through.
"""

from __future__ import annotations

import base64
import json
import socket
import uuid
import zlib
from pathlib import Path

import pytest

from tests.fakeserver import FakeServer, error, text, tools

# loop is the shell's grandparent: an unsandboxed call runs under spawn.guard, loop's own child.
LOOP_PID = "L=$(sed 's/.*) //' /proc/$PPID/stat | cut -d' ' -f2); "
PROBE = (LOOP_PID + "cat /proc/$L/environ | tr '\\0' '\\n'; tr '\\0' ' ' < /proc/$L/cmdline; echo; env; "
         "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' > leak.txt; "
         "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' >> leak.txt; env >> leak.txt")


def markers(n: int) -> list[str]:
    tag = uuid.uuid4().hex[:10]
    return [f"MARKER{i}x{tag}" for i in range(1, n + 1)]


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def home_bytes(home: Path) -> bytes:
    """Every file under LOOP_HOME, with git's zlib-compressed objects inflated."""
    out = []
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        data = path.read_bytes()
        out.append(data)
        try:
            out.append(zlib.decompress(data))
        except zlib.error:
            pass
    return b"\n".join(out)


def assert_absent(secrets: list[str], *texts: str | bytes) -> None:
    for blob in texts:
        raw = blob.encode() if isinstance(blob, str) else blob
        for secret in secrets:
            assert secret.encode() not in raw, f"{secret} leaked: ...{raw[raw.find(secret.encode()) - 80:][:200]!r}"


def sandbox_off(run_loop) -> list[str]:
    """`--sandbox off` where that flag exists: these tests are about loop's own process, unsandboxed."""
    helped = run_loop("agent", "--help")
    return ["--sandbox", "off"] if "--sandbox" in helped.stdout else []


def probe_run(run_loop, server, ws: Path, *extra: str, env: dict[str, str]):
    server.add(tools(("shell", {"command": PROBE})), text("done"))
    return run_loop("agent", "-C", str(ws), "--json", "--approval", "all", *sandbox_off(run_loop), *extra,
                    "look around", env=env)


def check_probe(proc, ws: Path) -> str:
    """The probe ran and read real process data; returns its tool result."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [result] = [e for e in events(proc.stdout) if e["type"] == "tool_result"]
    assert not result["is_error"], result["content"]
    leak = (ws / "leak.txt").read_text(errors="replace")
    assert "LOOP_HOME=" in result["content"] and "LOOP_HOME=" in leak and "loopagent" in leak
    return result["content"]


def test_secret_variables_are_not_in_loops_process_or_anything_it_writes(run_loop, server, tmp_path, loop_home):
    m = markers(5)
    env = {"OPENAI_API_KEY": f"sk-{m[0]}", "AWS_SECRET_ACCESS_KEY": m[1], "GITHUB_TOKEN": m[2],
           "DATABASE_URL": f"postgres://app:{m[3]}@db/x", "MYSQL_PWD": m[4]}
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = probe_run(run_loop, server, ws, "--base-url", server.url, env=env)
    content = check_probe(proc, ws)
    assert "MYSQL_PWD" not in content and "DATABASE_URL" not in content  # scrubbed from the shell's env
    assert server.headers[0]["Authorization"] == f"Bearer sk-{m[0]}"  # the key still works, from memory
    assert_absent(m, proc.stdout, proc.stderr, json.dumps(server.requests), (ws / "leak.txt").read_bytes(),
                  home_bytes(loop_home))


def test_api_key_on_the_command_line_is_not_in_proc_cmdline(run_loop, server, tmp_path, loop_home):
    [key] = markers(1)
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = probe_run(run_loop, server, ws, "--base-url", server.url, "--api-key", f"sk-{key}", env={})
    content = check_probe(proc, ws)
    assert "look around" in content  # the cmdline was read: the task is there, the key is not
    assert server.headers[0]["Authorization"] == f"Bearer sk-{key}"
    assert_absent([key], proc.stdout, proc.stderr, json.dumps(server.requests), (ws / "leak.txt").read_bytes(),
                  home_bytes(loop_home))


def test_known_secret_values_are_redacted_from_tool_results(run_loop, server, tmp_path, loop_home):
    token, password = markers(2)
    ws = tmp_path / "ws"
    ws.mkdir()
    encoded = base64.b64encode(f"sk-{token}".encode()).decode()
    (ws / "notes.txt").write_text(f"key sk-{token} as base64 {encoded}\npw {password}\n")
    server.add(tools(("read_file", {"path": "notes.txt"}), ("shell", {"command": "cat notes.txt"})), text("ok"))
    proc = run_loop("agent", "-C", str(ws), "--json", "--approval", "all", *sandbox_off(run_loop),
                    "--base-url", server.url, "read the notes",
                    env={"OPENAI_API_KEY": f"sk-{token}", "DATABASE_URL": f"mysql://root:{password}@db/app"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = [e["content"] for e in events(proc.stdout) if e["type"] == "tool_result"]
    assert len(results) == 2 and all("key [redacted] as base64 [redacted]" in r and "pw [redacted]" in r
                                     for r in results)
    # Not the whole LOOP_HOME: the checkpoints hold notes.txt itself, as they should.
    assert_absent([f"sk-{token}", encoded, password], proc.stdout, proc.stderr, json.dumps(server.requests),
                  home_bytes(loop_home / "sessions"))


def credentialed(url: str, user_pw: str, key: str) -> str:
    return url.replace("http://", f"http://u:{user_pw}@") + f"?api-key={key}"


def test_credentials_in_the_base_url_are_used_and_never_shown(run_loop, tmp_path, loop_home):
    pw, key = markers(2)
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeServer([text("hello")]) as server:
        proc = run_loop("agent", "-C", str(ws), "--json", "--base-url", credentialed(server.url, pw, key), "hi")
        sent = server.headers[0]["Authorization"]
    assert sent == "Basic " + base64.b64encode(f"u:{pw}".encode()).decode()
    result = events(proc.stdout)[-1]
    # The fake server may not route a query string; either way the run ends with a clean result line.
    assert result["type"] == "result" and result["status"] in ("completed", "model_error", "error"), proc.stderr
    if result["status"] != "completed":
        assert server.url in result["message"]
    shown = run_loop("config", "-C", str(ws), env={"LOOP_BASE_URL": credentialed(server.url, pw, key)})
    assert shown.returncode == 0 and server.url.split("//")[1] in shown.stdout
    assert_absent([pw, key], proc.stdout, proc.stderr, shown.stdout, shown.stderr, home_bytes(loop_home))
    header = json.loads(next((loop_home / "sessions").rglob("*.jsonl")).read_text().splitlines()[0])
    assert header["base_url"] == server.url


@pytest.mark.parametrize("json_out", [True, False])
def test_an_unreachable_credentialed_server_is_named_without_credentials(run_loop, tmp_path, loop_home, json_out):
    pw, key = markers(2)
    ws = tmp_path / "ws"
    ws.mkdir()
    with socket.socket() as closed:  # bound, never listening: connections are refused at once
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        proc = run_loop("agent", "-C", str(ws), *(["--json"] if json_out else []),
                        "--base-url", credentialed(url, pw, key), "hi", env={"LOOP_RETRIES": "0"})
    assert proc.returncode != 0
    assert f"cannot reach {url}/chat/completions" in proc.stdout + proc.stderr
    assert_absent([pw, key], proc.stdout, proc.stderr, home_bytes(loop_home))


def test_a_server_that_echoes_the_api_key_in_its_error_does_not_put_it_on_screen(run_loop, server, tmp_path,
                                                                                  loop_home):
    (key,) = markers(1)
    ws = tmp_path / "ws"
    ws.mkdir()
    server.add(error(401, f"Incorrect API key provided: {key}. Find your key at ..."))
    proc = run_loop("agent", "-C", str(ws), "--json", "--base-url", server.url, "--api-key", key, "hi")
    assert proc.returncode == 1
    result = events(proc.stdout)[-1]
    assert result["type"] == "result" and "401" in result["message"] and "[redacted]" in result["message"]
    assert_absent([key], proc.stdout, proc.stderr, home_bytes(loop_home))
