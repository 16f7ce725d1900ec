"""The sandbox through the real `loop agent --json` against the fake server, with the real bwrap.

The attacks live in scripts of the (hostile) workspace, run as `./attack.sh`: the policy cannot
see inside a script, so what stops them here is the sandbox, the wall these tests are about.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopagent.sandbox.probe import probe
from tests.fakeserver import text, tools

needs_bwrap = pytest.mark.skipif(not probe(os.environ.get("PATH")).works,
                                 reason=f"no working bwrap here: {probe(os.environ.get('PATH')).problem}")


def script(ws: Path, name: str, body: str) -> str:
    path = ws / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)
    return f"./{name}"


def run_shell(run_loop, server, ws: Path, commands: list[str], *extra: str, env: dict | None = None,
              after=None) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """One model turn of shell calls in mode all, then an answer; returns the run and each call's result."""
    server.add(tools(*[("shell", {"command": c}) for c in commands]), after or text("done"))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--no-checkpoints",
                    "--approval", "all", *extra, "do the task", env=env)
    results = []
    if len(server.requests) > 1:
        results = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    return proc, results


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the workspace, /tmp and /var/tmp (private or empty inside the sandbox)."""
    path = Path(tempfile.mkdtemp(prefix="loop-sandbox-test-", dir=Path.home()))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@needs_bwrap
def test_writes_outside_the_workspace_fail_and_the_canary_survives(run_loop, server, ws, outside, tmp_path):
    canary = outside / "canary.txt"
    canary.write_text("canary\n")
    tmp_canary = tmp_path / "tmp-canary.txt"  # outside the workspace but under /tmp
    tmp_canary.write_text("canary\n")
    attack = script(ws, "attack.sh", f"echo inside > ok.txt\nrm -f {tmp_canary}; echo pwned > {tmp_canary}\n"
                                     f"echo pwned > {canary}\nrm -f {canary}\necho new > {outside}/new.txt\n")
    proc, [result] = run_shell(run_loop, server, ws, [attack])
    assert proc.returncode == 0, proc.stderr
    assert canary.read_text() == "canary\n" and tmp_canary.read_text() == "canary\n"
    assert sorted(os.listdir(outside)) == ["canary.txt"]
    assert (ws / "ok.txt").read_text() == "inside\n"  # the workspace itself stays writable
    assert "Read-only file system" in result and "[sandbox]" in result and "sandbox_writable" in result


@needs_bwrap
def test_git_hooks_and_config_cannot_be_changed_but_commits_work(run_loop, server, ws):
    subprocess.run(["git", "init", "-q", str(ws)], check=True, timeout=30)
    subprocess.run(["git", "-C", str(ws), "config", "user.email", "t@example.com"], check=True, timeout=30)
    subprocess.run(["git", "-C", str(ws), "config", "user.name", "T"], check=True, timeout=30)
    hooks = ws / ".git" / "hooks"
    (hooks / "pre-push").write_text("#!/bin/sh\nexit 0 # canary\n")
    before_hooks = {p.name: p.read_bytes() for p in hooks.iterdir()}
    before_config = (ws / ".git" / "config").read_bytes()
    (ws / "a.txt").write_text("a\n")
    attack = script(ws, "attack.sh", "\n".join([
        "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit", "chmod +x .git/hooks/pre-commit",
        "echo 'touch pwned' >> .git/hooks/pre-push", "rm -f .git/hooks/pre-push",
        "git config core.fsmonitor 'touch pwned'", "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> .git/config",
        "mv .git/hooks .git/hooks-old", "mv .git .git-old", "git config --unset user.name",
        "echo \"$PWD\" > .git/commondir", "echo '* filter=x' > .git/info/attributes", "",
    ]))
    proc, [attacked, committed] = run_shell(run_loop, server, ws, [attack, "git add -A && git commit -qm sandboxed"])
    assert proc.returncode == 0, proc.stderr
    assert {p.name: p.read_bytes() for p in hooks.iterdir()} == before_hooks
    assert (ws / ".git" / "config").read_bytes() == before_config
    assert not (ws / "pwned").exists() and not (ws / ".git-old").exists() and not (ws / ".git" / "hooks-old").exists()
    assert not (ws / ".git" / "commondir").exists() and not (ws / ".git" / "info" / "attributes").exists()
    assert "Read-only file system" in attacked and "[sandbox]" in attacked
    assert committed.startswith("exit code 0"), committed
    log = subprocess.run(["git", "-C", str(ws), "log", "--format=%s", "--name-only"], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    assert log.splitlines()[:2] == ["sandboxed", ""] and "a.txt" in log
    assert not (ws / "pwned").exists()  # the commit ran no hook planted by the attack


@needs_bwrap
def test_a_repository_cannot_be_created_with_hooks_and_no_mount_point_is_left_behind(run_loop, server, ws):
    attack = script(ws, "attack.sh", "git init -q . ; mkdir -p .git/hooks .loop\n"
                                     "echo 'touch pwned' > .git/hooks/pre-commit\necho '{}' > .loop/config.json\n")
    proc, [result] = run_shell(run_loop, server, ws, [attack])
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(ws)) == ["attack.sh"]  # no .git, no .loop, not even the empty mount points
    assert "[sandbox]" in result


@needs_bwrap
def test_no_network_inside_not_even_to_loopback_unless_network(run_loop, server, ws):
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    connect = script(ws, "connect.sh", f"{sys.executable} -c \"import socket; socket.create_connection(("
                                       f"'127.0.0.1', {port}), timeout=5); print('CONNECTED')\"\n")
    proc, [result] = run_shell(run_loop, server, ws, [connect])
    assert proc.returncode == 0, proc.stderr
    assert "CONNECTED" not in result and "Connection refused" in result and "--network" in result
    server.requests.clear()
    proc, [result] = run_shell(run_loop, server, ws, [connect], "--network")
    assert proc.returncode == 0, proc.stderr
    assert result == "exit code 0\nCONNECTED\n"


@needs_bwrap
def test_loop_home_and_ssh_keys_read_as_empty(run_loop, server, ws, tmp_path, loop_home):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_canary").write_text("SSH-KEY-CANARY-7731\n")
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "canary.txt").write_text("LOOP-HOME-CANARY-7731\n")
    peek = script(ws, "peek.sh", f"ls -A {home}/.ssh {loop_home}; cat {home}/.ssh/id_canary {loop_home}/canary.txt; "
                                 "cat ~/.ssh/id_canary\n")
    proc, [result] = run_shell(run_loop, server, ws, [peek], env={"HOME": str(home)})
    assert proc.returncode == 0, proc.stderr
    assert "CANARY-7731" not in result and "CANARY-7731" not in proc.stdout
    assert f"{home}/.ssh:\n\n{loop_home}:\n" in result  # both listed, both empty
    assert (home / ".ssh" / "id_canary").read_text() == "SSH-KEY-CANARY-7731\n"


@needs_bwrap
def test_proc_shows_nothing_of_loops_environment(run_loop, server, ws):
    peek = script(ws, "peek.sh", "cat /proc/$PPID/environ /proc/1/environ | tr '\\0' '\\n' | grep -c . ; "
                                 "cat /proc/[0-9]*/environ | tr '\\0' '\\n' | grep CANARY; ls /proc | grep -c '^[0-9]'\n")
    proc, [result] = run_shell(run_loop, server, ws, [peek], env={"CANARY_TOKEN": "env-canary-5521"})
    assert proc.returncode == 0, proc.stderr
    assert "env-canary-5521" not in result and "env-canary-5521" not in proc.stdout
    count = int(result.splitlines()[1])
    assert count > 0  # /proc/$PPID/environ was readable; it just is not loop's


def live_commands(marker: str) -> list[str]:
    """Command lines of live processes on this machine that contain `marker`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(cmdline)
    return found


@pytest.mark.parametrize("mode", [pytest.param("workspace-write", marks=needs_bwrap), "off"])
def test_a_background_setsid_job_dies_with_its_call(run_loop, server, ws, mode):
    marker = "9871.25" if mode == "off" else "9872.25"  # a sleep no other test starts
    bg = script(ws, "bg.sh", f"setsid sh -c 'echo up > job.txt; exec sleep {marker}' > /dev/null 2>&1 &\n"
                             "until [ -s job.txt ]; do :; done\necho started\n")
    seen = []

    def check(body: dict):  # runs when the result reaches the server, while loop still runs
        seen.append(live_commands(f"sleep {marker}"))
        return text("done")

    try:
        proc, [result] = run_shell(run_loop, server, ws, [bg], "--sandbox", mode, after=check)
        assert proc.returncode == 0, proc.stderr
        assert result == "exit code 0\nstarted\n"
        assert seen == [[]]
    finally:
        subprocess.run(["pkill", "-KILL", "-f", f"sleep {marker}"], timeout=10)


@pytest.fixture
def no_bwrap_path(tmp_path: Path) -> str:
    """A PATH with bash and a few tools, and no bwrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("bash", "sh", "echo", "cat", "ls", "env"):
        if shutil.which(name):
            (bin_dir / name).symlink_to(shutil.which(name))
    return str(bin_dir)


def test_without_bwrap_mode_all_asks_headless_exit_4_and_sandbox_off_runs(run_loop, server, ws, no_bwrap_path):
    proc, [result] = run_shell(run_loop, server, ws, ["echo hi > ran.txt"], env={"PATH": no_bwrap_path})
    assert proc.returncode == 4, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["status"] == "approval_required"
    assert "sandbox" in result.lower() and not (ws / "ran.txt").exists()
    [verdict] = [line for line in proc.stderr.splitlines() if "sandbox:" in line]
    assert verdict.startswith("loop: sandbox: unavailable (bwrap not found")
    server.requests.clear()
    proc, [result] = run_shell(run_loop, server, ws, ["echo hi > ran.txt; cat ran.txt"], "--sandbox", "off",
                               env={"PATH": no_bwrap_path})
    assert proc.returncode == 0, proc.stderr
    assert result == "exit code 0\nhi\n"


def test_a_project_file_cannot_turn_the_sandbox_off_but_the_user_can(run_loop, server, ws, no_bwrap_path, loop_home):
    (ws / ".loop").mkdir()
    (ws / ".loop" / "config.json").write_text('{"sandbox": "off", "sandbox_writable": ["/"]}\n')
    proc, _ = run_shell(run_loop, server, ws, ["echo hi"], env={"PATH": no_bwrap_path})
    assert proc.returncode == 4, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "ignored" in line]
    assert len(warnings) == 2 and '"sandbox"' in warnings[0] and '"sandbox_writable"' in warnings[1]
    server.requests.clear()
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text('{"sandbox": "off"}\n')
    proc, [result] = run_shell(run_loop, server, ws, ["echo hi"], env={"PATH": no_bwrap_path})
    assert proc.returncode == 0, proc.stderr
    assert result == "exit code 0\nhi\n"


@needs_bwrap
def test_read_only_mode_keeps_the_workspace_read_only(run_loop, server, ws):
    (ws / "keep.txt").write_text("kept\n")
    proc, [result] = run_shell(run_loop, server, ws, ["echo changed > keep.txt"], "--sandbox", "read-only")
    assert proc.returncode == 0, proc.stderr
    assert (ws / "keep.txt").read_text() == "kept\n"
    assert "Read-only file system" in result and "--sandbox read-only" in result


def test_an_invalid_sandbox_mode_is_one_line_and_exit_2(run_loop, ws):
    proc = run_loop("agent", "-C", str(ws), "--sandbox", "bogus", "task")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "--sandbox" in proc.stderr


@needs_bwrap
def test_code_the_parser_cannot_judge_runs_in_mode_all_but_cannot_delete_the_parent(run_loop, server, outside):
    """The issue's parent-deleting forms that mode all lets run (inline code, a script): the wall holds."""
    ws = outside / "ws"  # a parent outside /tmp, which is private inside the sandbox
    ws.mkdir()
    canary = outside / "parent-canary.txt"
    canary.write_text("canary\n")
    attack = script(ws, "wipe.sh", 'rm -rf ..; rm -rf "${PWD%/*}"\n')
    proc, results = run_shell(run_loop, server, ws, [
        "python3 -c 'import shutil; shutil.rmtree(\"..\")'",
        "perl -e 'system(\"rm -rf ..\")'",
        attack,
    ])
    assert proc.returncode == 0, proc.stderr
    assert len(results) == 3 and not any(r.startswith("denied") for r in results), results
    assert canary.read_text() == "canary\n"
    assert "Read-only file system" in results[0] and "[sandbox]" in results[0]
