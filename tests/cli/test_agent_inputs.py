"""What `loop agent` accepts before it runs: URLs, flag values, context sizes, a piped task, the workspace.

Each bad input is one line on stderr and exit 2, nothing sent to a server, no session left behind;
under --json the `result` line still ends stdout. All through the real entry point.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.fakeserver import text, tools


def lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def sessions_in(home: Path) -> list[Path]:
    return list((home / "sessions").rglob("*.jsonl")) if (home / "sessions").exists() else []


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    return proc.stderr


@pytest.mark.parametrize("url", ["localhost:8080", "ftp://x", "http://", "http://[::1/v1"])
def test_a_base_url_without_http_scheme_or_host_is_refused_up_front(run_loop, tmp_path, loop_home, url):
    proc = run_loop("agent", "-C", str(tmp_path), "--base-url", url, "hi")
    assert proc.returncode == 2
    line = one_line(proc)
    assert line.startswith("loop: --base-url must be an http:// or https:// URL with a host")
    assert sessions_in(loop_home) == []


def test_under_json_a_refused_flag_still_ends_with_a_result_line(run_loop, tmp_path):
    proc = run_loop("agent", "--json", "-C", str(tmp_path), "--base-url", "localhost:8080", "hi")
    assert proc.returncode == 2
    (result,) = lines(proc.stdout)  # no session line: nothing started
    assert result["type"] == "result" and result["status"] == "error" and result["steps"] == 0
    assert "--base-url" in result["message"]
    # the same for a value typer itself refuses while parsing
    proc = run_loop("agent", "--json", "-C", str(tmp_path), "--max-steps", "lots", "hi")
    assert proc.returncode == 2
    assert lines(proc.stdout)[-1]["type"] == "result"
    assert "--max-steps must be a whole number, not 'lots'" in one_line(proc)


def test_credentials_in_a_refused_url_are_not_echoed(run_loop, tmp_path):
    proc = run_loop("agent", "--json", "-C", str(tmp_path), "--base-url", "ftp://me:sk-hidden-1234@x/v1?key=q9", "hi")
    assert proc.returncode == 2
    assert "sk-hidden-1234" not in proc.stderr + proc.stdout and "q9" not in proc.stderr + proc.stdout


@pytest.mark.parametrize(("args", "expected"), [
    (("--approval", "yolo"), "loop: --approval must be one of ask, edits, all, plan, not 'yolo'"),
    (("--sandbox", "maybe"), "loop: --sandbox must be one of workspace-write, read-only, off, not 'maybe'"),
    (("--max-steps", "0"), "loop: --max-steps must be at least 1, not 0"),
    (("--ctx-size", "12"), "loop: --ctx-size must be at least 256, not 12"),
    (("--max-tokens-total", "1.5"), "loop: --max-tokens-total must be a whole number, not '1.5'"),
])
def test_a_bad_flag_value_is_one_clean_line_naming_what_is_allowed(run_loop, tmp_path, args, expected):
    proc = run_loop("agent", "-C", str(tmp_path), *args, "hi")
    assert proc.returncode == 2
    assert one_line(proc).startswith(expected)
    assert "Value error" not in proc.stderr and "Input should" not in proc.stderr


@pytest.mark.parametrize(("where", "expected"), [
    ("env", "env LOOP_APPROVAL: approval must be one of ask, edits, all, plan, not 'yolo'"),
    ("file", "line 2: approval must be one of ask, edits, all, plan, not 'yolo'"),
])
def test_a_bad_setting_from_env_or_file_is_one_line_too(run_loop, tmp_path, loop_home, where, expected):
    env = {}
    if where == "env":
        env["LOOP_APPROVAL"] = "yolo"
    else:
        loop_home.mkdir(parents=True, exist_ok=True)
        (loop_home / "config.json").write_text('{\n  "approval": "yolo"\n}\n')
    proc = run_loop("agent", "-C", str(tmp_path), "hi", env=env)
    assert proc.returncode == 2
    assert expected in one_line(proc)


def test_a_context_size_that_cannot_hold_the_system_prompt_is_refused_with_the_numbers(
        run_loop, server, tmp_path, loop_home):
    proc = run_loop("agent", "-C", str(tmp_path), "--base-url", server.url, "--ctx-size", "256", "hi")
    assert proc.returncode == 2
    line = one_line(proc)
    assert line.startswith("loop: context size 256 (command line) is too small")
    least = int(line.rsplit("--ctx-size ", 1)[1].split()[0].replace(",", ""))
    assert server.requests == [] and sessions_in(loop_home) == []
    # the size it names is enough: the run starts and sends its request
    server.add(text("ok"))
    proc = run_loop("agent", "--json", "-C", str(tmp_path), "--base-url", server.url, "--ctx-size", str(least), "hi")
    assert proc.returncode == 0, proc.stderr
    assert len(server.requests) == 1
    proc = run_loop("agent", "-C", str(tmp_path), "--base-url", server.url, "--ctx-size", str(least - 1), "hi")
    assert proc.returncode == 2


def test_a_task_piped_on_stdin_runs_headless(run_loop, server, tmp_path):
    server.add(tools(("shell", {"command": "touch a.txt"})), text("done"))
    proc = run_loop("agent", "--json", "-C", str(tmp_path), "--base-url", server.url,
                    input="summarise the repository\n")
    assert proc.returncode == 4, proc.stderr  # headless: the command needs approval; no one can give it
    out = [e for e in lines(proc.stdout) if e["type"] != "notice"]  # the context size notice (probe)
    assert out[1] == {"type": "user", "index": 1, "content": "summarise the repository"}
    assert server.requests[0]["messages"][-1]["content"] == "summarise the repository"
    assert out[-1]["status"] == "approval_required" and not (tmp_path / "a.txt").exists()


def test_a_piped_task_without_json_prints_the_answer(run_loop, server, tmp_path):
    server.add(text("The answer is 42."))
    proc = run_loop("agent", "-C", str(tmp_path), "--base-url", server.url, input="what is it?")
    assert proc.returncode == 0, proc.stderr
    assert "The answer is 42." in proc.stdout
    assert server.requests[0]["messages"][-1]["content"] == "what is it?"


def git_repo(path: Path) -> Path:
    (path / "sub" / "deeper").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True, timeout=30)
    (path / "top.txt").write_text("at the root\n")
    return path


def test_from_a_subdirectory_of_a_repository_the_workspace_is_its_root(run_loop, server, tmp_path):
    repo = git_repo(tmp_path / "repo")
    server.add(tools(("read_file", {"path": "top.txt"})), text("read it"))
    proc = run_loop("agent", "--json", "--base-url", server.url, "hi", cwd=repo / "sub" / "deeper")
    assert proc.returncode == 0, proc.stderr
    assert f"loop: workspace: {repo.resolve()} (the git repository around" in proc.stderr
    result = [e for e in lines(proc.stdout) if e["type"] == "tool_result"][0]
    assert not result["is_error"] and "at the root" in result["content"]


def test_dash_c_still_wins_over_the_repository_root(run_loop, server, tmp_path):
    repo = git_repo(tmp_path / "repo")
    server.add(tools(("read_file", {"path": "top.txt"})), text("not there"))
    proc = run_loop("agent", "--json", "-C", ".", "--base-url", server.url, "hi", cwd=repo / "sub")
    assert proc.returncode == 0, proc.stderr
    assert "workspace:" not in proc.stderr
    result = [e for e in lines(proc.stdout) if e["type"] == "tool_result"][0]
    assert result["is_error"]


def test_config_from_a_subdirectory_reads_the_repository_project_file(run_loop, tmp_path):
    repo = git_repo(tmp_path / "repo")
    (repo / ".loop").mkdir()
    (repo / ".loop" / "config.json").write_text('{"max_steps": 7}\n')
    proc = run_loop("config", cwd=repo / "sub")
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("max_steps"))
    assert "7" in row and "project file" in row


def test_a_repository_at_home_itself_is_not_taken_as_the_workspace(run_loop, tmp_path):
    home = git_repo(tmp_path / "home")  # a dotfiles repository
    (home / "proj" / ".loop").mkdir(parents=True)
    (home / "proj" / ".loop" / "config.json").write_text('{"max_steps": 5}\n')
    proc = run_loop("config", cwd=home / "proj", env={"HOME": str(home)})
    assert proc.returncode == 0, proc.stderr
    assert "workspace:" not in proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("max_steps"))
    assert "5" in row and "project file" in row
