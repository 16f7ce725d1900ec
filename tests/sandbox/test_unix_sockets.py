"""The sandbox reaches no Unix socket of the host: /run and /var/tmp are empty inside, and every path socket
the host listens on elsewhere (found in /proc/net/unix) is covered, whatever the network setting."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopagent.sandbox import open_sandbox, spec_from
from loopagent.sandbox.bwrap import bwrap_argv
from loopagent.sandbox.layout import Layout, host_sockets, survey
from loopagent.sandbox.spec import SandboxSpec
from loopagent.sandbox.walls import wall_note
from loopagent.secrets import scrubbed_env
from loopagent.tools.base import ToolContext
from loopagent.tools.shell import Shell, ShellParams
from loopagent.tools.workspace import Workspace
from tests.sandbox.test_sandbox_e2e import needs_bwrap, run_shell, script


@pytest.fixture
def listeners() -> Iterator[list[socket.socket]]:
    """Listening sockets of the host: one under /var/tmp, one in a directory only the scan can name."""
    dirs = [tempfile.mkdtemp(prefix="loop-sock-", dir=d) for d in ("/var/tmp", Path.home())]
    socks = []
    for d in dirs:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(os.path.join(d, "s"))
        s.listen(8)  # a connect completes into the backlog with no accept: nothing to wait for
        s.setblocking(False)
        socks.append(s)
    yield socks
    for s in socks:
        s.close()
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


def connections(s: socket.socket) -> int:
    count = 0
    while True:
        try:
            conn, _ = s.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


@pytest.mark.parametrize("mode", [pytest.param("workspace-write", marks=needs_bwrap), "off"])
def test_a_command_cannot_connect_to_a_host_socket(run_loop, server, tmp_path, listeners, mode):
    ws = tmp_path / "ws"
    ws.mkdir()
    paths = [s.getsockname() for s in listeners]
    attack = script(ws, "attack.sh", f"exec {sys.executable} - <<'EOF'\nimport socket\nfor p in {paths!r}:\n"
                                     "    s = socket.socket(socket.AF_UNIX)\n    try:\n"
                                     "        s.connect(p); s.sendall(b'PWNED'); print('CONNECTED', p)\n"
                                     "    except OSError as e:\n        print('refused', p, e)\nEOF\n")
    proc, [result] = run_shell(run_loop, server, ws, [attack], "--sandbox", mode)
    assert proc.returncode == 0, proc.stderr
    if mode == "off":  # the attack is real: without the sandbox it reaches both
        assert [connections(s) for s in listeners] == [1, 1] and result.count("CONNECTED") == 2
        return
    assert [connections(s) for s in listeners] == [0, 0], result
    assert "CONNECTED" not in result and result.count("refused /") == 2


def test_the_scan_lists_existing_path_sockets_only(tmp_path, listeners):
    real = listeners[1].getsockname()
    table = tmp_path / "unix"
    table.write_text("Num       RefCount Protocol Flags    Type St Inode Path\n"
                     f"0000: 00000002 00000000 00010000 0001 01 1 {real}\n"
                     "0000: 00000002 00000000 00010000 0001 01 2 @abstract-name\n"
                     "0000: 00000003 00000000 00000000 0001 03 3\n"
                     "0000: 00000002 00000000 00010000 0001 01 4 relative/sock\n"
                     f"0000: 00000002 00000000 00010000 0001 01 5 {tmp_path}/gone.sock\n"
                     f"0000: 00000003 00000000 00000000 0001 03 6 {real}\n")
    (tmp_path / "gone.sock").write_text("a file now, not a socket\n")
    assert host_sockets(str(table)) == [os.path.realpath(real)]
    assert host_sockets(str(tmp_path / "missing")) == []
    assert os.path.realpath(real) in host_sockets()  # the real table of this host


def test_the_layout_covers_host_sockets_but_not_the_workspaces_own(tmp_path, listeners):
    ws = tmp_path / "ws"
    ws.mkdir()
    own = socket.socket(socket.AF_UNIX)
    own.bind(str(ws / "dev.sock"))
    own.listen(1)
    try:
        spec = spec_from("workspace-write", ws, {"HOME": str(tmp_path / "nohome")})
        hidden = survey(spec).hide_files
    finally:
        own.close()
    home_sock = os.path.realpath(listeners[1].getsockname())
    assert home_sock in hidden and str(ws / "dev.sock") not in hidden
    assert not any(p.startswith(("/var/tmp/", "/run/", "/tmp/")) for p in hidden)  # emptied as whole dirs


def test_socket_dirs_are_emptied_before_the_workspace_and_made_read_only_last():
    spec = SandboxSpec("workspace-write", "/var/tmp/ws", private=("/run", "/var/tmp"),
                       through_tmp=("/run/systemd/resolve/stub-resolv.conf",), network=True)
    argv = bwrap_argv(spec, Layout(), ["true"])
    at = argv.index
    assert argv[at("/run") - 3:at("/run") + 1] == ["--perms", "0555", "--tmpfs", "/run"]
    assert at("/run") < at("/var/tmp") < at("/run/systemd/resolve/stub-resolv.conf") < at("/var/tmp/ws")
    assert argv[-8:-2] == ["--remount-ro", "/run", "--remount-ro", "/var/tmp", "--chdir", "/var/tmp/ws"]


def test_the_spec_empties_run_and_var_tmp_and_shows_the_resolver_only_with_the_network(tmp_path):
    spec = spec_from("workspace-write", tmp_path, {"HOME": str(tmp_path)})
    assert set(spec.private) <= {"/run", "/var/tmp"} and "/tmp" not in spec.private
    if os.path.isdir("/var/tmp") and not os.path.islink("/var/tmp"):
        assert "/var/tmp" in spec.private
    resolver = os.path.realpath("/etc/resolv.conf")
    networked = spec_from("workspace-write", tmp_path, {"HOME": str(tmp_path)}, network=True)
    assert resolver not in spec.through_tmp
    if resolver.startswith(tuple(d + "/" for d in networked.private)):  # systemd-resolved's stub under /run
        assert resolver in networked.through_tmp


def test_a_silenced_download_that_fails_on_the_network_wall_gets_the_note():
    spec = SandboxSpec("workspace-write", "/ws")
    assert "--network" in wall_note("", spec, 6, "curl -s https://example.org/x")
    assert "--network" in wall_note("", spec, 4, "cd x && /usr/bin/wget -q https://example.org/")
    assert wall_note("", spec, 22, "curl -sf https://example.org/") is None  # an HTTP error: it got through
    assert wall_note("", spec, 6, "./build.sh") is None
    assert wall_note("", SandboxSpec("workspace-write", "/ws", network=True), 6, "curl -s x") is None


@needs_bwrap
@pytest.mark.skipif(shutil.which("curl") is None, reason="no curl here")
def test_curl_s_in_the_sandbox_gets_the_note_through_the_shell_tool(tmp_path):
    sandbox = open_sandbox(spec_from("workspace-write", tmp_path, os.environ), os.environ)
    c = ToolContext(Workspace(tmp_path), env=scrubbed_env(os.environ), executor=sandbox.executor)
    result = Shell().run(ShellParams(command="curl -s http://127.0.0.1:9/"), c)
    assert result.content == ("exit code 7\n(no output)\n[sandbox] the sandbox has no network; the user can allow it "
                              "with --network.\n")


@needs_bwrap
def test_programs_on_path_under_an_emptied_dir_still_run(tmp_path):
    """A toolchain under /var/tmp (or NixOS's /run/current-system/sw/bin) stays on PATH, read-only."""
    prefix = Path(tempfile.mkdtemp(prefix="loop-tool-", dir="/var/tmp"))
    try:
        (prefix / "bin").mkdir()
        (prefix / "bin" / "hello-tool").write_text("#!/bin/sh\necho hello from $0\n")
        (prefix / "bin" / "hello-tool").chmod(0o755)
        (prefix / "other.txt").write_text("x\n")
        environ = {**os.environ, "PATH": f"{prefix}/bin:{os.environ['PATH']}"}
        spec = spec_from("workspace-write", tmp_path, environ)
        assert str(prefix) in spec.through_tmp
        c = ToolContext(Workspace(tmp_path), env=scrubbed_env(environ),
                        executor=open_sandbox(spec, environ).executor)
        result = Shell().run(ShellParams(command=f"hello-tool && touch {prefix}/new"), c)
        assert result.content.startswith(f"exit code 1\nhello from {prefix}/bin/hello-tool\n"), result.content
        assert "Read-only file system" in result.content and not (prefix / "new").exists()
    finally:
        shutil.rmtree(prefix, ignore_errors=True)
