"""Hooks through the real `loop` entry point and the fake server, with real shell scripts."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.conftest import where_shells_run
from tests.fakeserver import text, tools, user_texts


def lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def script(where: Path, name: str, body: str) -> str:
    """A real shell script; the command a hook config names."""
    path = where / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return f"sh {path}"


def user_hooks(loop_home: Path, hooks: dict) -> None:
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps({"hooks": hooks}))


def agent(run_loop, server, ws: Path, *extra: str, env: dict | None = None):
    return run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                    *where_shells_run(), *extra, "do the task", env=env)


def tool_contents(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_pre_tool_exit_2_blocks_shell_and_the_model_reads_why(run_loop, server, workspace, loop_home, tmp_path):
    marker = workspace / "ran"  # inside: the sandbox lets the command write it
    seen = tmp_path / "stdin.json"
    hook = script(tmp_path, "pre.sh", f'cat > {seen}\necho "no shell today: run the tests yourself" >&2\nexit 2\n')
    user_hooks(loop_home, {"pre_tool": [{"match": "shell|edit_file", "command": hook}]})
    server.add(tools(("shell", {"command": f"touch {marker}"})), text("ok, I will not."))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()  # the command never ran
    [result] = tool_contents(server.requests[1])
    assert result.startswith("blocked by hook: no shell today: run the tests yourself")
    assert "pre_tool[0]" in result and "pre.sh" in result  # which hook blocked it
    payload = json.loads(seen.read_text())
    assert payload["event"] == "pre_tool" and payload["tool"] == "shell"
    assert payload["arguments"]["command"] == f"touch {marker}"  # as validated, defaults included
    assert payload["cwd"] == str(workspace.resolve()) and payload["call_id"] and payload["session_id"]
    session = next(e for e in lines(proc.stdout) if e["type"] == "session")
    assert payload["session_id"] == session["id"]
    ran = [e for e in lines(proc.stdout) if e["type"] == "hook"]
    assert len(ran) == 1 and ran[0]["event"] == "pre_tool" and ran[0]["tool"] == "shell"
    assert ran[0]["verdict"] == "block" and "pre.sh" in ran[0]["command"] and ran[0]["reason"]
    recorded = [json.loads(line) for line in Path(session["path"]).read_text().splitlines()]
    assert [r["verdict"] for r in recorded if r["type"] == "hook"] == ["block"]  # in the session file too


def test_pre_tool_blocks_via_json_on_stdout_and_only_matching_tools(run_loop, server, workspace, loop_home,
                                                                   tmp_path):
    hook = script(tmp_path, "pre.sh", 'cat >/dev/null\necho \'{"decision": "block", "reason": "use grep"}\'\n')
    user_hooks(loop_home, {"pre_tool": [{"match": "read_file", "command": hook}]})
    server.add(tools(("read_file", {"path": "a.txt"})), tools(("list_files", {})), text("done"))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    [blocked] = tool_contents(server.requests[1])
    assert blocked.startswith("blocked by hook: use grep") and "hello" not in blocked
    listed = tool_contents(server.requests[2])[1]
    assert "a.txt" in listed and "blocked" not in listed  # the regex did not match list_files


def test_the_terminal_shows_each_hook_run_as_one_line(run_loop, server, workspace, loop_home, tmp_path):
    ok = script(tmp_path, "ok.sh", "cat >/dev/null\n")
    no = script(tmp_path, "no.sh", "echo 'not on Fridays' >&2\nexit 2\n")
    user_hooks(loop_home, {"pre_tool": [{"match": "list_files", "command": ok}, {"match": "shell", "command": no}]})
    server.add(tools(("list_files", {}), ("shell", {"command": "true"})), text("fine"))
    proc = run_loop("agent", "-C", str(workspace), "--base-url", server.url, "--approval", "all",
                    *where_shells_run(), "do the task")
    assert proc.returncode == 0, proc.stderr
    shown = [line.strip() for line in proc.stdout.splitlines() if line.strip().startswith("hook ")]
    assert shown == [f"hook pre_tool [0] {ok} (list_files): ok",
                     f"hook pre_tool [1] {no} (shell): blocked: not on Fridays"]


def test_post_tool_appends_context_to_the_result(run_loop, server, workspace, loop_home, tmp_path):
    seen = tmp_path / "stdin.json"
    hook = script(tmp_path, "post.sh", f'cat > {seen}\necho \'{{"context": "formatter: 0 files changed"}}\'\n')
    user_hooks(loop_home, {"post_tool": [{"match": "shell", "command": hook}]})
    server.add(tools(("shell", {"command": "echo from-the-shell"})), text("done"))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    [result] = tool_contents(server.requests[1])
    assert "from-the-shell" in result and result.rstrip().endswith("formatter: 0 files changed")
    payload = json.loads(seen.read_text())
    assert payload["event"] == "post_tool" and "from-the-shell" in payload["result"]["content"]
    assert payload["result"]["is_error"] is False
    stored = [e for e in lines(proc.stdout) if e["type"] == "tool_result"]
    assert "formatter: 0 files changed" in stored[0]["content"]  # the feed shows what the model read


def test_stop_hook_sends_the_model_back_once_then_lets_it_finish(run_loop, server, workspace, loop_home, tmp_path):
    once = tmp_path / "once"
    seen = tmp_path / "stdin.json"
    hook = script(tmp_path, "stop.sh", f'cat > {seen}\nif [ ! -e {once} ]; then touch {once}; '
                  'echo "run the tests before you stop" >&2; exit 2; fi\nexit 0\n')
    user_hooks(loop_home, {"stop": [{"command": hook}]})
    server.add(text("all done"), text("tests pass, done"))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    assert len(server.requests) == 2
    assert user_texts(server.requests[1])[-1] == "run the tests before you stop"
    assert json.loads(seen.read_text())["text"] == "tests pass, done"
    assert lines(proc.stdout)[-1]["status"] == "completed"


def test_a_stop_hook_blocks_at_most_three_times_per_run(run_loop, server, workspace, loop_home, tmp_path):
    hook = script(tmp_path, "stop.sh", 'echo \'{"decision": "block", "reason": "not yet"}\'\n')
    user_hooks(loop_home, {"stop": [{"command": hook}]})
    server.add(*[text(f"done {i}") for i in range(5)])
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    assert len(server.requests) == 4  # the answer, then three times sent back
    assert user_texts(server.requests[3]).count("not yet") == 3


def test_a_hook_that_times_out_is_a_warning_and_does_not_block(run_loop, server, workspace, loop_home, tmp_path):
    marker = workspace / "ran"  # inside: the sandbox lets the command write it
    hook = script(tmp_path, "slow.sh", "sleep 30\nexit 2\n")
    user_hooks(loop_home, {"pre_tool": [{"match": "shell", "command": hook, "timeout": 0.5}]})
    server.add(tools(("shell", {"command": f"touch {marker}"})), text("done"))
    started = time.monotonic()
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 20  # not the hook's 30 s
    assert marker.exists()
    warnings = [line for line in proc.stderr.splitlines() if "hook pre_tool[0]" in line]
    assert len(warnings) == 1 and "timed out after 0.5 s" in warnings[0]
    assert "blocked" not in tool_contents(server.requests[1])[0]


def test_on_error_block_fails_closed(run_loop, server, workspace, loop_home, tmp_path):
    marker = workspace / "ran"  # inside: the sandbox lets the command write it
    hook = script(tmp_path, "broken.sh", "exit 7\n")
    user_hooks(loop_home, {"pre_tool": [{"command": hook, "on_error": "block"}]})
    server.add(tools(("shell", {"command": f"touch {marker}"})), text("done"))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert "blocked by hook: the hook failed (exit status 7)" in tool_contents(server.requests[1])[0]


def test_hooks_get_the_environment_without_secrets(run_loop, server, workspace, loop_home, tmp_path):
    dump = tmp_path / "env.txt"
    hook = script(tmp_path, "env.sh", f"env > {dump}\n")
    user_hooks(loop_home, {"stop": [{"command": hook}]})
    server.add(text("done"))
    proc = agent(run_loop, server, workspace, env={"MY_SERVICE_TOKEN": "tok-very-secret-1234",
                                                    "PLAIN_SETTING": "visible-value"})
    assert proc.returncode == 0, proc.stderr
    seen = dump.read_text()
    assert "PLAIN_SETTING=visible-value" in seen and "tok-very-secret-1234" not in seen


def test_a_project_file_hook_is_ignored_with_one_warning(run_loop, server, workspace, loop_home, tmp_path):
    marker = tmp_path / "project-hook-ran"
    hook = script(tmp_path, "evil.sh", f"touch {marker}\n")
    (workspace / ".loop").mkdir()
    (workspace / ".loop" / "config.json").write_text(json.dumps(
        {"hooks": {"pre_tool": [{"command": hook}], "stop": [{"command": hook}],
                   "session_start": [{"command": hook}]}}))
    server.add(tools(("list_files", {})), text("done"))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    warned = [line for line in proc.stderr.splitlines() if "hooks" in line]
    assert len(warned) == 1 and "project file" in warned[0] and "ignored" in warned[0]


def test_a_bad_hooks_setting_is_one_line_and_exit_2(run_loop, server, workspace, loop_home):
    user_hooks(loop_home, {"pre_tool": [{"match": "shell"}]})
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "command" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_malformed_project_hooks_and_loop_hooks_variable_are_ignored_not_fatal(run_loop, server, workspace,
                                                                               tmp_path):
    marker = tmp_path / "env-hook-ran"
    hook = script(tmp_path, "env.sh", f"touch {marker}\n")
    (workspace / ".loop").mkdir()
    (workspace / ".loop" / "config.json").write_text(json.dumps({"hooks": {"pre_tool": [{"match": "("}]}}))
    server.add(tools(("list_files", {})), text("done"))
    proc = agent(run_loop, server, workspace, env={"LOOP_HOOKS": json.dumps({"pre_tool": [{"command": hook}]})})
    assert proc.returncode == 0, proc.stderr  # a project file cannot make the run fail on a setting it may not set
    assert not marker.exists() and not [e for e in lines(proc.stdout) if e["type"] == "hook"]
    warned = [line for line in proc.stderr.splitlines() if '"hooks"' in line]
    assert len(warned) == 2 and "project file" in warned[0] and "LOOP_HOOKS" in warned[1]


def test_session_start_adds_context_once(run_loop, server, workspace, loop_home, tmp_path):
    hook = script(tmp_path, "start.sh", 'cat >/dev/null\necho "branch main; CI is red on test_api"\n')
    user_hooks(loop_home, {"session_start": [{"command": hook}]})
    server.add(text("noted"))
    proc = agent(run_loop, server, workspace)
    assert proc.returncode == 0, proc.stderr
    said = user_texts(server.requests[0])  # one message, the context first (tests/hooks/test_context_order.py)
    assert len(said) == 1 and said[0].index("branch main; CI is red on test_api") < said[0].index("do the task")
