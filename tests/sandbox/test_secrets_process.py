"""Loop's own process: the re-exec that hides secrets, its fallback, and what it must not trust."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopagent.secrets import is_secret
from tests.conftest import clean_env
from tests.fakeserver import text, tools


def test_without_exec_the_secrets_leave_os_environ_but_still_configure_loop(tmp_path, loop_home):
    # Not Linux (or exec failed): only os.environ can be scrubbed; settings still see the key.
    code = (
        "import os, sys; real, sys.platform = sys.platform, 'darwin'\n"
        "from loopagent import secrets; secrets.conceal(['agent']); sys.platform = real\n"
        "from loopagent.config import load_config\n"
        "key = load_config(__import__('pathlib').Path('.'), {}).settings.api_key.get_secret_value()\n"
        "print(key == 'sk-fallback-1', 'OPENAI_API_KEY' in os.environ, 'MYSQL_PWD' in os.environ,"
        " os.environ.get('PATH') is not None)\n"
    )
    env = {**clean_env(loop_home), "OPENAI_API_KEY": "sk-fallback-1", "MYSQL_PWD": "pw-fallback"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=30)
    assert proc.stdout.split() == ["True", "False", "False", "True"], proc.stderr


def test_the_key_reaches_loop_config_through_the_re_exec(run_loop, tmp_path):
    proc = run_loop("config", "-C", str(tmp_path), env={"OPENAI_API_KEY": "sk-through-the-pipe"})
    assert proc.returncode == 0, proc.stderr
    [row] = [line for line in proc.stdout.splitlines() if line.startswith("api_key")]
    assert "******** (set)" in row and "env OPENAI_API_KEY" in row
    assert "sk-through-the-pipe" not in proc.stdout + proc.stderr


def test_a_foreign_secrets_fd_is_not_read(run_loop, tmp_path):
    # Someone else's LOOP_SECRETS_FD (another pid) must not make loop read stdin as secrets.
    proc = run_loop("config", "-C", str(tmp_path), input="LOOP_API_KEY=sk-injected\0--api-key=sk-injected",
                    env={"LOOP_SECRETS_FD": "0:1"})
    assert proc.returncode == 0, proc.stderr
    [row] = [line for line in proc.stdout.splitlines() if line.startswith("api_key")]
    assert "(not set)" in row


@pytest.mark.parametrize("secret", [False, True])
def test_loop_re_executes_only_when_there_is_something_to_hide(server, tmp_path, loop_home, secret):
    # A re-executed loop has LOOP_SECRETS_FD in its /proc environ; the original exec has not.
    server.add(tools(("shell", {"command": "L=$(sed 's/.*) //' /proc/$PPID/stat | cut -d' ' -f2); tr '\\0' '\\n' < /proc/$L/environ"})), text("done"))
    env = {k: v for k, v in clean_env(loop_home).items() if not is_secret(k, v)}
    if secret:
        env["GITHUB_TOKEN"] = "ghp-to-hide"
    proc = subprocess.run([sys.executable, "-m", "loopagent", "agent", "-C", str(tmp_path), "--json",
                           "--approval", "all", "--base-url", server.url, "--sandbox", "off", "look"],
                          env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [result] = [json.loads(line) for line in proc.stdout.splitlines() if '"tool_result"' in line]
    assert "LOOP_HOME=" in result["content"]
    assert ("LOOP_SECRETS_FD=" in result["content"]) is secret


@pytest.mark.skipif(not (Path(sys.executable).parent / "loop").exists(), reason="no installed `loop` script")
def test_the_re_exec_does_not_import_a_loopagent_from_the_current_directory(tmp_path, loop_home):
    # The console script never imports from the current directory; `python -m` would, without -P.
    hostile = tmp_path / "repo" / "loopagent"
    hostile.mkdir(parents=True)
    canary = tmp_path / "pwned"
    (hostile / "__init__.py").write_text(f"open({str(canary)!r}, 'w').write('x')\n")
    (hostile / "__main__.py").write_text("")
    env = {**clean_env(loop_home), "OPENAI_API_KEY": "sk-hostile-cwd"}
    proc = subprocess.run([str(Path(sys.executable).parent / "loop"), "config"], cwd=hostile.parent, env=env,
                          capture_output=True, text=True, timeout=30)
    assert not canary.exists()
    assert proc.returncode == 0 and "******** (set)" in proc.stdout, proc.stderr


def test_the_entry_point_module_runs_nothing_on_import():
    proc = subprocess.run([sys.executable, "-c", "import loopagent.__main__"], capture_output=True, text=True,
                          timeout=30, env={**os.environ, "OPENAI_API_KEY": "sk-import-only"})
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
