"""The sandbox's command line by value, and the layout read from real directories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from loopagent.sandbox.bwrap import ISOLATION, bwrap_argv
from loopagent.sandbox.layout import Layout, survey
from loopagent.sandbox.spec import SECRET_STORES, SandboxSpec, spec_from
from loopagent.sandbox.walls import wall_note

WS = "/work/ws"


def pairs(argv: list[str], option: str) -> list[tuple[str, str]]:
    """(src, dest) of every `option SRC DEST` in argv."""
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == option]


def singles(argv: list[str], option: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == option]


def test_the_default_command_line_in_full():
    argv = bwrap_argv(SandboxSpec("workspace-write", WS), Layout(), ["bash", "-c", "true"], bwrap="/usr/bin/bwrap")
    assert argv == [
        "/usr/bin/bwrap", "--die-with-parent", "--unshare-user", "--unshare-pid",
        "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL", "--unshare-net",
        "--disable-userns", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
        "--bind", WS, WS, "--chdir", WS, "--", "bash", "-c", "true",
    ]


def test_network_read_only_and_a_kernel_without_proc():
    spec = SandboxSpec("read-only", WS, network=True, proc=False, disable_userns=False)
    argv = bwrap_argv(spec, Layout(), ["true"])
    assert "--unshare-net" not in argv and "--disable-userns" not in argv
    assert pairs(argv, "--ro-bind") == [("/", "/"), (WS, WS)] and pairs(argv, "--bind") == []
    assert "--proc" not in argv
    # never the host's /proc (it shows loop's environment): an empty read-only one instead
    assert argv[argv.index("/proc") - 1] == "--tmpfs" and singles(argv, "--remount-ro") == ["/proc"]


def test_walls_come_after_the_workspace_and_tmp_comes_before_it():
    layout = Layout(writable=("/cache",), pinned=(f"{WS}/.git",), protect=(f"{WS}/.git/hooks", f"{WS}/.git/config"),
                    block_dirs=(f"{WS}/.loop",), block_files=(f"{WS}/.git/newfile",),
                    hide_dirs=("/home/u/.ssh",), hide_files=("/home/u/.netrc",))
    argv = bwrap_argv(SandboxSpec("workspace-write", "/tmp/ws"), layout, ["true"])
    at = argv.index
    assert at("/tmp") < at("/tmp/ws")  # a workspace under /tmp stays visible over the private /tmp
    assert pairs(argv, "--bind") == [("/tmp/ws", "/tmp/ws"), ("/cache", "/cache"), (f"{WS}/.git", f"{WS}/.git")]
    assert pairs(argv, "--ro-bind") == [("/", "/"), (f"{WS}/.git/hooks", f"{WS}/.git/hooks"),
                                        (f"{WS}/.git/config", f"{WS}/.git/config"),
                                        ("/dev/null", f"{WS}/.git/newfile"), ("/dev/null", "/home/u/.netrc")]
    assert singles(argv, "--tmpfs") == ["/tmp", f"{WS}/.loop", "/home/u/.ssh"]
    assert singles(argv, "--remount-ro") == [f"{WS}/.loop", "/home/u/.ssh"]
    assert at(f"{WS}/.git/hooks") > at("/cache") and argv[-2:] == ["--", "true"]
    assert argv[: len(ISOLATION) + 1][1:] == list(ISOLATION)


def git_init(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True, timeout=30)


def test_survey_of_a_repository_protects_what_runs_code_and_pins_git(tmp_path):
    git_init(tmp_path)
    (tmp_path / ".loop").mkdir()
    layout = survey(spec_from("workspace-write", tmp_path, {"HOME": str(tmp_path / "nohome")}))
    ws, git = os.path.realpath(tmp_path), f"{os.path.realpath(tmp_path)}/.git"
    assert layout.pinned == (git,)
    assert layout.protect == (f"{ws}/.loop", f"{git}/hooks", f"{git}/info", f"{git}/config")
    assert layout.block_dirs == (f"{git}/modules",) and layout.stubs == (f"{git}/commondir",)
    assert layout.block_files == (f"{git}/config.worktree",)


def test_survey_blocks_what_is_missing_so_it_cannot_be_created(tmp_path):
    layout = survey(spec_from("workspace-write", tmp_path, {"HOME": str(tmp_path / "nohome")}))
    ws = os.path.realpath(tmp_path)
    assert layout.block_dirs == (f"{ws}/.loop", f"{ws}/.git") and layout.protect == ()
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "hooks").mkdir()
    layout = survey(spec_from("workspace-write", tmp_path, {"HOME": str(tmp_path / "nohome")}))
    assert f"{ws}/.git/config" in layout.block_files and f"{ws}/.git/hooks" in layout.protect
    assert f"{ws}/.git/info" in layout.block_dirs
    assert layout.mount_points() == layout.block_dirs + layout.block_files + layout.stubs


def test_survey_follows_a_worktree_to_its_git_dirs(tmp_path):
    main, wt = tmp_path / "main", tmp_path / "wt"
    git_init(main)
    subprocess.run(["git", "-C", str(main), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q",
                    "--allow-empty", "-m", "root"], check=True, timeout=30)
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(wt)], check=True, timeout=30)
    layout = survey(spec_from("workspace-write", wt, {"HOME": str(tmp_path / "nohome")}))
    common = os.path.realpath(main / ".git")
    gitdir = f"{common}/worktrees/wt"
    assert layout.writable == (common, gitdir)  # git commit writes objects, refs and the index there
    assert f"{os.path.realpath(wt)}/.git" in layout.protect  # the pointer itself cannot be repointed
    assert {f"{gitdir}/commondir", f"{gitdir}/gitdir", f"{common}/hooks", f"{common}/config",
            f"{common}/info"} <= set(layout.protect)
    assert f"{common}/commondir" in layout.stubs and f"{gitdir}/config.worktree" in layout.block_files


def test_a_gitdir_pointing_at_no_repository_is_not_made_writable(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / ".git").write_text(f"gitdir: {home}\n")
    layout = survey(spec_from("workspace-write", tmp_path / "ws", {"HOME": str(home)}))
    assert layout.writable == () and layout.protect == (f"{os.path.realpath(tmp_path / 'ws')}/.git",)


def test_secret_stores_and_loop_home_are_hidden_when_they_exist(tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".netrc").write_text("machine x password y\n")
    loop_home = tmp_path / "loop-home"
    loop_home.mkdir()
    (tmp_path / "ws").mkdir()
    spec = spec_from("workspace-write", tmp_path / "ws", {"HOME": str(home), "LOOP_HOME": str(loop_home)})
    assert {".ssh", ".aws", ".gnupg", ".config/gh", ".netrc", ".docker", ".kube", ".pypirc"} <= set(SECRET_STORES)
    layout = survey(spec)
    assert layout.hide_dirs[:3] == (str(loop_home), str(home / ".ssh"), str(home / ".config" / "gh"))
    assert str(home / ".netrc") in layout.hide_files and str(home / ".aws") not in layout.hide_dirs


def test_a_store_holding_the_workspace_is_not_hidden_over_it(tmp_path):
    home = tmp_path / "home"
    (home / ".ssh" / "ws").mkdir(parents=True)
    layout = survey(spec_from("workspace-write", home / ".ssh" / "ws", {"HOME": str(home)}))
    assert str(home / ".ssh") not in layout.hide_dirs


def test_read_only_mode_binds_nothing_writable_and_needs_no_mount_points(tmp_path):
    (tmp_path / "cache").mkdir()
    spec = spec_from("read-only", tmp_path / "cache", {"HOME": str(tmp_path)}, writable=[str(tmp_path / "cache")])
    layout = survey(spec)
    assert layout.writable == layout.pinned == layout.block_dirs == layout.block_files == ()
    assert pairs(bwrap_argv(spec, layout, ["true"]), "--bind") == []


def test_writable_extras_resolve_home_and_workspace_relative_paths_and_skip_missing(tmp_path):
    (tmp_path / "home" / ".cache").mkdir(parents=True)
    (tmp_path / "ws" / "build").mkdir(parents=True)
    spec = spec_from("workspace-write", tmp_path / "ws", {"HOME": str(tmp_path / "home")},
                     writable=["~/.cache", "build", "/does/not/exist"])
    assert spec.writable == (str(tmp_path / "home" / ".cache"), str(tmp_path / "ws" / "build"), "/does/not/exist")
    assert survey(spec).writable == spec.writable[:2]
    assert spec.describe() == "sandboxed: workspace writable (+3 more dirs), no network"


def test_descriptions_for_the_approval_prompt():
    assert SandboxSpec("workspace-write", WS).describe() == "sandboxed: workspace writable, no network"
    assert SandboxSpec("read-only", WS, network=True).describe() == "sandboxed: workspace read-only, network on"
    assert SandboxSpec("off", WS).describe() == "not sandboxed"


def test_wall_notes_name_the_wall_and_the_way_out():
    spec = SandboxSpec("workspace-write", WS, hidden=("/home/u/.ssh",))
    assert "sandbox_writable" in wall_note("touch: cannot touch '/etc/x': Read-only file system", spec)
    assert "--sandbox off" in wall_note("error: could not write config file .git/config: Device or resource busy", spec)
    assert "--network" in wall_note("curl: (6) Could not resolve host: example.com", spec)
    assert "--network" in wall_note("curl: (7) Failed to connect to 127.0.0.1 port 80: Connection refused", spec)
    assert "hidden" in wall_note("cat: /home/u/.ssh/id_rsa: No such file or directory", spec)
    assert wall_note("AssertionError: 1 != 2", spec) is None
    assert wall_note("Could not resolve host: x", SandboxSpec("workspace-write", WS, network=True)) is None
    assert wall_note("Read-only file system", SandboxSpec("off", WS)) is None
    assert "read-only in this run" in wall_note("Read-only file system", SandboxSpec("read-only", WS))


def test_a_venv_under_tmp_is_shown_read_only_through_the_private_tmp(tmp_path):
    """A clone in /tmp with its venv on PATH (CI does this) must still find its interpreter inside."""
    if not str(tmp_path).startswith("/tmp/"):
        pytest.skip("pytest's temporary directory is not under /tmp here")
    venv = tmp_path / "clone" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (tmp_path / "tool").mkdir()
    environ = {"PATH": f"{venv}/bin:/usr/bin:{tmp_path / 'tool'}:/tmp:/nonexistent", "HOME": str(tmp_path)}
    spec = spec_from("workspace-write", tmp_path / "clone", environ)
    assert str(venv) in spec.through_tmp and str(tmp_path / "tool") in spec.through_tmp
    assert "/tmp" not in spec.through_tmp and "/usr" not in spec.through_tmp
    argv = bwrap_argv(spec, Layout(), ["true"])
    shown = pairs(argv, "--ro-bind-try")
    assert (str(venv), str(venv)) in shown
    assert argv.index("/tmp") < argv.index(str(venv)) < argv.index(str(tmp_path / "clone"))
