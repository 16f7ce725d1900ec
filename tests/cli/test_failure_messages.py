"""How a failed run explains itself: the error and a hint on stderr, never the key; `loop policy check`'s
exit code for scripts. Through the real entry point against the fake server (or a closed port)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from loopagent.messages import AssistantMessage, ToolCall, ToolResult
from tests.conftest import clean_env
from tests.fakeserver import error, tools

KEY = "sk-test-do-not-print-4242"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_server_ends_with_a_hint_on_stderr(run_loop, tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    proc = run_loop("agent", "--json", "-C", str(tmp_path), "--base-url", url, "--api-key", KEY, "hi",
                    env={"LOOP_RETRIES": "0"})
    assert proc.returncode == 1
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["type"] == "result" and result["status"] == "error"  # not the model's fault
    assert result["message"].endswith("(after 1 attempt)")
    err = proc.stderr.splitlines()
    assert err[-2].startswith(f"loop: error: cannot reach {url}") and err[-2].endswith("(after 1 attempt)")
    assert err[-1] == "loop: hint: start a server there, pass --base-url URL, or run `loop doctor` to probe it"
    assert KEY not in proc.stderr + proc.stdout


def test_the_hint_goes_to_stderr_in_the_terminal_renderer_too(run_loop, tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    proc = run_loop("agent", "-C", str(tmp_path), "--base-url", url, "hi", env={"LOOP_RETRIES": "0"})
    assert proc.returncode == 1
    assert "loop: hint: start a server there" in proc.stderr and "hint" not in proc.stdout


def test_a_401_without_a_key_hints_at_the_key_options(run_loop, server, tmp_path):
    server.add(error(401, "missing API key"))
    proc = run_loop("agent", "--json", "-C", str(tmp_path), "--base-url", server.url, "hi")
    assert proc.returncode == 1 and json.loads(proc.stdout.splitlines()[-1])["status"] == "error"
    assert "loop: error: HTTP 401" in proc.stderr
    assert proc.stderr.splitlines()[-1] == \
        "loop: hint: the server wants an API key: pass --api-key KEY or set LOOP_API_KEY"


def test_a_401_with_a_key_says_it_was_refused_and_never_prints_it(run_loop, server, tmp_path):
    server.add(error(401, f"invalid key {KEY}"))  # a server that echoes the key back
    proc = run_loop("agent", "--json", "-C", str(tmp_path), "--base-url", server.url, "hi",
                    env={"LOOP_API_KEY": KEY})
    assert proc.returncode == 1
    assert "refused the API key: check --api-key or LOOP_API_KEY" in proc.stderr
    assert KEY not in proc.stderr and "[redacted]" in proc.stderr


def test_other_model_errors_get_no_hint(run_loop, server, tmp_path):
    server.add(error(400, "bad request"))
    proc = run_loop("agent", "--json", "-C", str(tmp_path), "--base-url", server.url, "hi")
    assert proc.returncode == 1 and "hint" not in proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["status"] == "model_error"  # the server's word on the request


def test_policy_check_exit_code_lets_a_script_branch(tmp_path, loop_home):
    script = ('for c in "ls" "make deploy" "rm -rf /"; do loop_() { "$PY" -m loopagent policy check -C "$WS" "$1"; }; '
              'loop_ "$c" >/dev/null; echo "$c=$?"; done')
    env = {**clean_env(loop_home), "PY": sys.executable, "WS": str(tmp_path), "LOOP_ALLOW": '["ls"]'}
    proc = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert proc.stdout.splitlines() == ["ls=0", "make deploy=3", "rm -rf /=4"], proc.stderr


def test_an_unknown_session_to_resume_or_fork_is_one_line_and_exit_2(run_loop, server, tmp_path, loop_home):
    from loopagent.session import SessionWriter, header
    from loopagent.session.catalog import sessions_dir

    sessions_dir(loop_home, tmp_path).mkdir(parents=True)
    there = sessions_dir(loop_home, tmp_path) / "20250101T120000Z-hi.jsonl"
    SessionWriter.create(there, header(there.stem, tmp_path, "m", server.url, "hi")).close()
    proc = run_loop("agent", "-C", str(tmp_path), "--base-url", server.url, "--fork", "nosuch", "again")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "loop: no session 'nosuch' in this workspace; `loop sessions` lists them\n"
    assert proc.stdout == ""  # no "done: error" line repeating it
    headless = run_loop("agent", "--json", "-C", str(tmp_path), "--base-url", server.url, "--resume", "nosuch")
    assert headless.returncode == 2 and headless.stderr == proc.stderr
    assert [json.loads(line)["status"] for line in headless.stdout.splitlines()] == ["error"]
    assert server.requests == []  # nothing was asked of the model


def test_counts_of_one_read_as_one(run_loop, server, tmp_path):
    from loopagent.details import Details
    from loopagent.rerun import compare, conclusion, outcomes

    server.add(tools(("read_file", {"path": "nothing.txt"})))
    proc = run_loop("agent", "--json", "-C", str(tmp_path), "--base-url", server.url, "--max-steps", "1", "go")
    assert proc.returncode == 3
    assert json.loads(proc.stdout.splitlines()[-1])["message"] == "stopped after 1 model request (--max-steps)"

    call = ToolCall("c1", "shell", '{"command": "true"}')
    one = outcomes([AssistantMessage(tool_calls=(call,), stop_reason="tool_calls"),
                    ToolResult.ok("", details=Details("ok")).answering(call)])
    assert conclusion(compare(one, one)) == "replay: the call has the recorded outcome"
    assert conclusion(compare(one * 2, one * 2)) == "replay: all 2 calls have the recorded outcome"
    assert conclusion([]) == "replay: no call to compare"  # not "all 0 calls"
