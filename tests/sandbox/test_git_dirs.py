"""Git metadata cannot be made to run code from inside the sandbox, in every git dir a command can reach.

One workspace holds every shape at once: a linked worktree W of a main repository M outside it
(common dir M/.git, git dir M/.git/worktrees/W), a submodule W/sub (its git dir per worktree, under
M/.git/worktrees/W/modules/sub), a nested repository W/N, and a shipped `.git` file W/vendored
pointing at a victim repository V elsewhere. The attack plants what would make the user's next
`git status` or `git commit` outside run a program; the markers it names live in a host
directory the sandbox does not show, so only a process outside could create them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopagent.sandbox import gitdirs, open_sandbox
from loopagent.sandbox.bwrap import bwrap_argv
from loopagent.sandbox.layout import place_stubs, remove_mount_points, survey
from loopagent.sandbox.spec import spec_from
from loopagent.secrets import scrubbed_env
from loopagent.tools.base import ToolContext
from loopagent.tools.shell import Shell, ShellParams
from loopagent.tools.workspace import Workspace
from tests.sandbox.test_sandbox_e2e import needs_bwrap, run_shell, script


@pytest.fixture
def elsewhere() -> Iterator[Path]:
    """A directory outside /tmp and /var/tmp (private or empty inside the sandbox)."""
    path = Path(tempfile.mkdtemp(prefix="loop-gitdirs-test-", dir=Path.home()))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The shapes, built once for the tests that only read them."""
    root = tmp_path_factory.mktemp("shapes")
    return make_shapes(root, root)


GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=T", "-c", "protocol.file.allow=always"]


def git(*args: str | Path) -> str:
    return subprocess.run([*GIT, *map(str, args)], check=True, capture_output=True, text=True, timeout=30).stdout


def make_shapes(root: Path, elsewhere: Path) -> dict[str, Path]:
    """M (main, outside), W (its linked worktree: the workspace), W/sub, W/N, W/vendored -> V, which lies
    `elsewhere`: outside /tmp, so the sandbox shows it (read-only) and only the walls keep it unchanged."""
    m, s, w, v = root / "M", root / "S", root / "W", elsewhere / "V"
    for repo in (m, s, v):
        git("init", "-q", repo)
        git("-C", repo, "commit", "-q", "--allow-empty", "-m", repo.name)
    git("-C", m, "worktree", "add", "-q", w)
    git("-C", w, "submodule", "-q", "add", s, "sub")
    git("-C", w, "commit", "-qm", "add sub")
    git("init", "-q", w / "N")
    git("-C", w / "N", "commit", "-q", "--allow-empty", "-m", "n")
    (w / "vendored").mkdir()
    (w / "vendored" / ".git").write_text(f"gitdir: {v}/.git\n")  # shipped with the workspace
    shutil.rmtree(m / ".git" / "hooks")  # missing: the attack tries to create it
    shutil.rmtree(w / "N" / ".git" / "info")
    for repo in (m, w / "sub", w / "N", v):
        git("-C", repo, "config", "user.email", "t@example.com")
        git("-C", repo, "config", "user.name", "T")
    return {"M": m, "W": w, "V": v, "common": m / ".git", "wt": m / ".git" / "worktrees" / "W",
            "sub": m / ".git" / "worktrees" / "W" / "modules" / "sub", "N": w / "N" / ".git"}


ATTACK = r"""K=$1
G=$(git rev-parse --git-dir); C=$(git rev-parse --git-common-dir)
plant() { printf '[core]\n\tfsmonitor = "touch %s; false"\n' "$K/$1"; }
evil() { mkdir -p "$1"; cp -r "$C/objects" "$C/refs" "$C/HEAD" "$1/"; plant "$2" > "$1/config"; }
plant common-config >> "$C/config"
evil evil-wt wt-commondir; echo "$PWD/evil-wt" > "$G/commondir"
plant wt-config > "$G/config.worktree"
evil evil-sub sub-commondir; echo "$PWD/evil-sub" > "$G/modules/sub/commondir"
evil evil-n nested-commondir; echo "$PWD/evil-n" > N/.git/commondir
mkdir -p "$C/hooks"; printf '#!/bin/sh\ntouch %s\n' "$K/common-hook" > "$C/hooks/post-commit"; chmod +x "$C/hooks/post-commit"
mkdir -p N/.git/info; echo '* filter=x' > N/.git/info/attributes
(cd vendored && git commit -q --allow-empty -m pwned)
plant victim-config >> "$(cd vendored && git rev-parse --git-dir)/config"
"""
COMMITS = ("git commit -q --allow-empty -m in-worktree && git -C sub commit -q --allow-empty -m in-sub "
           "&& git -C N commit -q --allow-empty -m in-nested && git log -1 --format=%s && git -C sub log -1 "
           "--format=%s && git -C N log -1 --format=%s")


def users_git(shapes: dict[str, Path]) -> None:
    """What the user runs afterwards, outside the sandbox: status everywhere, a commit in M."""
    for repo in (shapes["M"], shapes["W"], shapes["W"] / "sub", shapes["W"] / "N", shapes["V"]):
        subprocess.run(["git", "-C", str(repo), "status"], capture_output=True, timeout=30)
    subprocess.run([*GIT, "-C", str(shapes["M"]), "commit", "-q", "--allow-empty", "-m", "user"],
                   capture_output=True, timeout=30)


@pytest.mark.parametrize("mode", [pytest.param("workspace-write", marks=needs_bwrap), "off"])
def test_planted_git_metadata_runs_nothing_outside_and_commits_still_work(run_loop, server, tmp_path, elsewhere, mode):
    shapes = make_shapes(tmp_path, elsewhere)
    markers = tmp_path / "markers"  # host /tmp: private inside the sandbox
    markers.mkdir()
    victim_head = git("-C", shapes["V"], "rev-parse", "HEAD")
    victim_config = (shapes["V"] / ".git" / "config").read_bytes()
    attack = script(shapes["W"], "attack.sh", ATTACK)
    proc, [committed, attacked] = run_shell(run_loop, server, shapes["W"], [COMMITS, f"{attack} {markers}"],
                                            "--sandbox", mode)
    assert proc.returncode == 0, proc.stderr
    assert committed.splitlines() == ["exit code 0", "in-worktree", "in-sub", "in-nested"], committed
    users_git(shapes)
    if mode == "off":  # without the sandbox the writes land; the tripwire puts back all but the victim's
        assert "tripwire:" in attacked  # (a command outside the sandbox can write any repository directly)
        assert sorted(os.listdir(markers)) == ["victim-config"]
        assert (shapes["N"] / "info" / "attributes").exists() and (shapes["wt"] / "config.worktree").exists()
        assert git("-C", shapes["V"], "rev-parse", "HEAD") != victim_head
        return
    assert os.listdir(markers) == [], attacked
    assert git("-C", shapes["V"], "rev-parse", "HEAD") == victim_head
    assert (shapes["V"] / ".git" / "config").read_bytes() == victim_config
    assert not (shapes["N"] / "info").exists() and not (shapes["common"] / "hooks").exists()
    assert not (shapes["wt"] / "config.worktree").exists()
    # the placeholders are gone and every repository still works for the user
    assert not (shapes["N"] / "commondir").exists() and not (shapes["common"] / "commondir").exists()
    assert git("-C", shapes["W"] / "N", "log", "-1", "--format=%s").strip() == "in-nested"
    assert "[sandbox]" in attacked and "Read-only file system" in attacked


def test_the_layout_guards_every_git_dir_and_does_not_follow_a_shipped_git_file(built, tmp_path):
    s = {k: os.path.realpath(v) for k, v in built.items()}
    layout = survey(spec_from("workspace-write", Path(s["W"]), {"HOME": str(tmp_path / "nohome")}))
    assert layout.writable == (s["common"], s["wt"], s["sub"])  # each points back at its checkout
    assert not any(p.startswith(s["V"]) for p in layout.writable + layout.pinned + layout.protect)
    assert f"{s['W']}/vendored/.git" in layout.protect  # the shipped pointer is kept as it is
    assert s["N"] in layout.pinned and f"{s['common']}/worktrees" in layout.protect  # other checkouts' entries
    assert {f"{s['common']}/config", f"{s['wt']}/commondir", f"{s['wt']}/gitdir", f"{s['wt']}/modules",
            f"{s['sub']}/config", f"{s['sub']}/hooks", f"{s['N']}/config"} <= set(layout.protect)
    assert {f"{s['common']}/hooks", f"{s['N']}/info"} <= set(layout.block_dirs)
    assert {f"{s['common']}/commondir", f"{s['sub']}/commondir", f"{s['N']}/commondir"} <= set(layout.stubs)
    assert f"{s['wt']}/config.worktree" in layout.block_files
    # a module's git dir is bound writable inside the read-only modules/, its config read-only inside that
    argv = bwrap_argv(spec_from("workspace-write", Path(s["W"]), {}), layout, ["true"])
    at = argv.index
    assert at(f"{s['wt']}/modules") < at(s["sub"]) < at(f"{s['sub']}/config")
    assert argv[at(s["sub"]) - 1] == "--bind" and argv[at(f"{s['sub']}/config") - 1] == "--ro-bind"


def test_a_submodule_workspace_binds_its_git_dir_and_guards_its_commondir(built, tmp_path):
    shapes = built
    sub = os.path.realpath(shapes["sub"])
    layout = survey(spec_from("workspace-write", shapes["W"] / "sub", {"HOME": str(tmp_path / "nohome")}))
    assert layout.writable == (sub,) and f"{sub}/commondir" in layout.stubs and f"{sub}/config" in layout.protect


@pytest.mark.parametrize("pointer", [
    "gitdir: {V}/.git",  # a plain repository elsewhere
    "gitdir: {M}/.git/worktrees/W",  # a real worktree's git dir, which points back at W, not here
    "gitdir: {W}/../M/.git/worktrees/W/modules/sub",  # a submodule's, whose core.worktree is W/sub
])
def test_a_git_file_into_another_checkouts_git_dir_is_not_followed(built, tmp_path, pointer):
    shapes = built
    ws = tmp_path / "shipped"
    ws.mkdir()
    (ws / ".git").write_text(pointer.format(**{k: str(v) for k, v in shapes.items()}) + "\n")
    layout = survey(spec_from("workspace-write", ws, {"HOME": str(tmp_path / "nohome")}))
    assert layout.writable == () and layout.pinned == () and layout.protect[-1] == f"{os.path.realpath(ws)}/.git"


def test_a_worktree_whose_commondir_names_another_repository_is_not_followed(built, tmp_path):
    shapes = built
    commondir = shapes["wt"] / "commondir"
    real = commondir.read_text()
    commondir.write_text(f"{shapes['V']}/.git\n")  # planted before loop started
    try:
        layout = survey(spec_from("workspace-write", shapes["W"], {"HOME": str(tmp_path / "nohome")}))
    finally:
        commondir.write_text(real)
    assert layout.writable == (os.path.realpath(shapes["sub"]),)  # the submodule's still points back


def test_the_nested_scan_is_bounded_and_skips_links_and_heavy_dirs(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    for rel in ("a/.git", "a/b/c/.git", "a/b/c/d/e/.git", "node_modules/x/.git", ".venv/y/.git",
                "fixtures/bare.git/objects", "fixtures/bare.git/refs", "fixtures/bare.git/x/.git"):
        (ws / rel).mkdir(parents=True)
    (ws / "fixtures" / "bare.git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / "link").mkdir()
    (ws / "link" / ".git").symlink_to(tmp_path)
    found = gitdirs.nested_repositories(str(ws))
    assert sorted(os.path.relpath(p, ws) for p in found) == ["a/.git", "a/b/c/.git", "fixtures/bare.git",
                                                             "link/.git"]
    layout = survey(spec_from("workspace-write", ws, {"HOME": str(tmp_path / "nohome")}))
    assert f"{ws}/link/.git" not in layout.pinned + layout.protect  # a bind would follow the link out
    assert f"{ws}/fixtures/bare.git" in layout.pinned and f"{ws}/fixtures/bare.git/config" in layout.block_files
    monkeypatch.setattr(gitdirs, "SCAN_REPOS", 1)
    assert [os.path.relpath(p, ws) for p in gitdirs.nested_repositories(str(ws))] == ["a/.git"]


def test_commondir_stubs_name_the_git_dir_itself_and_only_unchanged_ones_are_removed(tmp_path):
    git("init", "-q", tmp_path / "r")
    git("-C", tmp_path / "r", "commit", "-q", "--allow-empty", "-m", "r")
    layout = survey(spec_from("workspace-write", tmp_path / "r", {"HOME": str(tmp_path / "nohome")}))
    stub = tmp_path / "r" / ".git" / "commondir"
    place_stubs(layout)
    assert stub.read_text() == ".\n"
    assert git("-C", tmp_path / "r", "log", "-1", "--format=%s").strip() == "r"  # git outside keeps working
    remove_mount_points(layout.mount_points())
    assert not stub.exists()
    stub.write_text("elsewhere\n")  # not ours: left for the tripwire to judge
    remove_mount_points(layout.mount_points())
    assert stub.read_text() == "elsewhere\n"


def test_core_worktree_is_read_by_hand_with_the_last_value_winning(tmp_path):
    config = tmp_path / "config"
    config.write_text('[core]\n\tbare = false\n\tworktree = ../a\n[remote "origin"]\n\tworktree = x\n'
                      '[Core]\n\tWorkTree = "../../b"\n')
    assert gitdirs.core_worktree(str(config)) == "../../b"
    assert gitdirs.core_worktree(str(tmp_path / "missing")) is None


@pytest.mark.parametrize("mode", [pytest.param("workspace-write", marks=needs_bwrap), "off"])
def test_a_shipped_git_file_does_not_make_another_repository_writable(run_loop, server, tmp_path, elsewhere, mode):
    victim = elsewhere / "victim"
    git("init", "-q", victim)
    git("-C", victim, "commit", "-q", "--allow-empty", "-m", "victim")
    (victim / "canary.txt").write_text("canary\n")
    head, config = git("-C", victim, "rev-parse", "HEAD"), (victim / ".git" / "config").read_bytes()
    ws = elsewhere / "ws"  # a sibling, as a shipped `gitdir: ../victim/.git` expects
    ws.mkdir()
    (ws / ".git").write_text("gitdir: ../victim/.git\n")
    attack = script(ws, "attack.sh", 'D=$(git rev-parse --git-dir)\nprintf "[core]\\n\\tfsmonitor = x\\n" >> "$D/config"\n'
                                     'echo pwned > "$D/../canary.txt"\ngit -c user.email=a@b -c user.name=a commit -q '
                                     '--allow-empty -m pwned\n')
    proc, [result] = run_shell(run_loop, server, ws, [attack], "--sandbox", mode)
    assert proc.returncode == 0, proc.stderr
    changed = [git("-C", victim, "rev-parse", "HEAD") != head, (victim / ".git" / "config").read_bytes() != config,
               (victim / "canary.txt").read_text() != "canary\n"]
    # Without the sandbox the commit and the canary land; the tripwire, following the .git file, puts back
    # the config. With it, nothing of the victim is writable.
    assert changed == ([True, False, True] if mode == "off" else [False] * 3), result
    assert ("tripwire:" in result) == (mode == "off")


@needs_bwrap
def test_in_a_submodule_workspace_commits_work_and_its_commondir_cannot_be_planted(built):
    shapes = built  # a commit changes none of the shapes the other tests read
    ws = shapes["W"] / "sub"
    box = open_sandbox(spec_from("workspace-write", ws, os.environ), os.environ)
    c = ToolContext(Workspace(ws), env=scrubbed_env(os.environ), executor=box.executor)
    result = Shell().run(ShellParams(command="git commit -q --allow-empty -m in-sub && git log -1 --format=%s && "
                                             "echo /elsewhere > \"$(git rev-parse --git-dir)/commondir\""), c)
    assert result.content.startswith("exit code 1\nin-sub\n") and "Read-only file system" in result.content
    assert not (shapes["sub"] / "commondir").exists()
    assert git("-C", ws, "log", "-1", "--format=%s").strip() == "in-sub"


def test_a_plain_repositorys_submodule_git_dirs_are_guarded_inside_a_read_only_modules(built, tmp_path):
    sup = tmp_path / "super"
    git("init", "-q", sup)
    git("-C", sup, "submodule", "-q", "add", built["M"].parent / "S", "libs/s")  # a name with a slash
    layout = survey(spec_from("workspace-write", sup, {"HOME": str(tmp_path / "nohome")}))
    git_dir = f"{os.path.realpath(sup)}/.git"
    module = f"{git_dir}/modules/libs/s"
    assert layout.writable == () and {git_dir, module} <= set(layout.pinned)
    assert {f"{git_dir}/modules", f"{module}/config", f"{module}/hooks", f"{os.path.realpath(sup)}/libs/s/.git"} \
        <= set(layout.protect)
    assert f"{module}/commondir" in layout.stubs and f"{module}/modules" in layout.block_dirs


def test_a_git_dir_with_a_linked_hooks_dir_is_read_only_as_a_whole(tmp_path):
    """A bind would land on the link's target, and the link itself could be replaced by a planted dir."""
    git("init", "-q", tmp_path / "r")
    hooks = tmp_path / "r" / ".git" / "hooks"
    shutil.rmtree(hooks)
    hooks.symlink_to(tmp_path / "r" / ".githooks")
    layout = survey(spec_from("workspace-write", tmp_path / "r", {"HOME": str(tmp_path / "nohome")}))
    git_dir = f"{os.path.realpath(tmp_path / 'r')}/.git"
    assert git_dir in layout.protect and git_dir not in layout.pinned
    assert not any(p.startswith(git_dir + "/") for p in layout.protect + layout.block_files + layout.stubs)


def test_the_binds_stay_few_however_many_worktrees_and_nested_repositories(tmp_path):
    """bwrap rereads the mount table per bind: other checkouts' git dirs are one read-only bind in all,
    and nested repositories past the first few are one read-only bind each (no commits there)."""
    main = tmp_path / "main"
    git("init", "-q", main)
    git("-C", main, "commit", "-q", "--allow-empty", "-m", "r")
    for i in range(5):
        git("-C", main, "worktree", "add", "-q", tmp_path / f"w{i}")
        git("init", "-q", main / f"n{i}")
    layout = survey(spec_from("workspace-write", tmp_path / "w2", {"HOME": str(tmp_path / "nohome")}))
    common = os.path.realpath(main / ".git")
    assert layout.writable == (common, f"{common}/worktrees/w2") and f"{common}/worktrees" in layout.protect
    assert binds(layout) <= 16
    layout = survey(spec_from("workspace-write", main, {"HOME": str(tmp_path / "nohome")}))
    nested = [f"{os.path.realpath(main)}/n{i}/.git" for i in range(5)]
    assert [n in layout.pinned for n in nested] == [True] * gitdirs.WRITABLE_NESTED + [False]
    assert nested[-1] in layout.protect and f"{nested[-1]}/config" not in layout.protect
    assert binds(layout) == 9 + 7 * gitdirs.WRITABLE_NESTED + 1  # .loop, main .git, 4 nested, 1 read-only


def binds(layout) -> int:
    return len(layout.writable + layout.pinned + layout.protect + layout.block_dirs + layout.block_files
               + layout.stubs)
