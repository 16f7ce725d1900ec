"""The tripwire by value, in-process: planted git states (made with real git and bash, no sandbox)
and what `put_back` restores and reports; and the config reader against git's own reading."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from loopagent.sandbox.gitconfig import Doubt, parse, running, without_running
from loopagent.sandbox.tripwire import ASIDE, note, put_back, snapshot

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b",
           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}


def sh(ws: Path, script: str) -> None:
    env = {**os.environ, **GIT_ENV, "HOME": str(ws.parent / "home")}
    proc = subprocess.run(["bash", "-ec", script], cwd=ws, env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr


def git(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **GIT_ENV, "HOME": str(ws.parent / "home")}
    return subprocess.run(["git", *args], cwd=ws, env=env, capture_output=True, text=True, timeout=30)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "home").mkdir()
    sh(ws, "git init -q -b main . && echo a > a && git add a && git commit -qm a")
    return ws


PLANT_SUB = "git init -q sub && git -C sub config user.name fixture && git -C sub commit -q --allow-empty -m x"

# (what is planted before the snapshot, what the command plants, phrases the report must hold)
CASES = {
    "nested repository gains core.fsmonitor": (
        "", PLANT_SUB + " && git add sub && git -C sub config core.fsmonitor 'touch /tmp/m; false'",
        ["core.fsmonitor (sub/.git/config) removed"]),
    "existing nested config gains core.pager": (
        PLANT_SUB, "git -C sub config core.pager 'touch /tmp/m; cat'", ["gained core.pager (sub/.git/config) restored"]),
    "garbage HEAD and a bare shape at the root": (
        "", "printf garbage > .git/HEAD; mkdir objects refs; echo 'ref: refs/heads/main' > HEAD;"
            "printf '[log]\\n\\tshowSignature = true\\n[gpg]\\n\\tprogram = /tmp/x\\n' > config",
        ["a broken HEAD (.git/HEAD) restored", "a new bare repository at the workspace root (HEAD) moved aside",
         "gpg.program, log.showsignature (config) removed"]),
    "new .git file pointing outside": (
        "", "mkdir d && echo 'gitdir: /etc' > d/.git", ["a new `.git` file pointing outside the workspace (d/.git)"]),
    "new .git file with a NUL in its path": (
        "", "mkdir d && printf 'gitdir: a\\0b' > d/.git", ["(d/.git) moved aside"]),
    "new .git link pointing outside": (
        "", "mkdir d && ln -s /usr d/.git", ["(d/.git) moved aside to d/.git.loop-tripwire"]),
    "changed .git file": (
        "git worktree add -q wt", "echo 'gitdir: /etc' > wt/.git", ["a changed `.git` file (wt/.git) restored"]),
    "new commondir in the workspace's repository": (
        "", "mkdir -p ../elsewhere && echo ../../elsewhere > .git/commondir", ["a new `commondir` (.git/commondir)"]),
    "new hook in a nested repository": (
        PLANT_SUB, "printf '#!/bin/sh\\ntouch /tmp/m\\n' > sub/.git/hooks/pre-commit", ["a new or changed hook (sub/.git/hooks/pre-commit)"]),
    "a hook rewritten in place": (
        PLANT_SUB + " && printf '#!/bin/sh\\n' > sub/.git/hooks/post-commit && touch -d 2020-01-01 sub/.git/hooks/post-commit",
        "echo 'touch /tmp/m' >> sub/.git/hooks/post-commit && touch -d 2020-01-01 sub/.git/hooks/post-commit",
        ["a new or changed hook (sub/.git/hooks/post-commit) moved aside"]),
    "a config that is a FIFO": (
        "", "git init -q f && rm f/.git/config && mkfifo f/.git/config", ["(f/.git/config) moved aside"]),
    "an include added to a new config": (
        "", "git init -q --bare r.git && printf '[include]\\n\\tpath = ../evil\\n' >> r.git/config",
        ["include.path (r.git/config) removed"]),
    "a file the workspace's config includes gains an alias": (
        "git config include.path ../shared.gitconfig && printf '[user]\\n\\tname = a\\n' > shared.gitconfig",
        "printf '[alias]\\n\\tst = !touch /tmp/m\\n' >> shared.gitconfig", ["gained alias.st (shared.gitconfig) restored"]),
    "a config git cannot read": (
        "", "git init -q x && printf '[core\\n' >> x/.git/config", ["(x/.git/config) moved aside"]),
    "a new .git file pointing at a repository planted earlier": (
        "git init -q --bare store && printf '[core]\\n\\tpager = x\\n' >> store/config",
        "mkdir w && echo 'gitdir: ../store' > w/.git", ["a new config's core.pager (store/config) removed"]),
    "a repository added where the walk does not go": (
        "git init -q node_modules/m && git -C node_modules/m commit -q --allow-empty -m x"
        " && git init -q k/b/c/d/e/f/g/h/i/deep && git -C k/b/c/d/e/f/g/h/i/deep commit -q --allow-empty -m x",
        "git add -f node_modules/m k/b/c/d/e/f/g/h/i/deep"
        " && printf '[core]\\n\\tfsmonitor = x\\n' | tee -a node_modules/m/.git/config >> k/b/c/d/e/f/g/h/i/deep/.git/config",
        ["core.fsmonitor (node_modules/m/.git/config) removed",  # unwatched until added: judged as new
         "core.fsmonitor (k/b/c/d/e/f/g/h/i/deep/.git/config) removed"]),
    "a config replaced by a link": (
        PLANT_SUB, "cp sub/.git/config c2 && ln -sf ../../c2 sub/.git/config", ["(sub/.git/config) restored"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_planted_state_is_put_back_and_reported(ws: Path, case: str):
    setup, plant, phrases = CASES[case]
    if setup:
        sh(ws, setup)
    before = snapshot(str(ws))
    sh(ws, plant)
    done = put_back(before)
    line = note(done)
    for phrase in phrases:
        assert phrase in line, line
    assert line.startswith("tripwire:") and "\n" not in line
    assert put_back(snapshot(str(ws))) == []  # what was put back stays put back
    status = git(ws, "status", "--porcelain")
    assert status.returncode == 0 and git(ws, "rev-parse", "--git-dir").stdout.strip() == ".git", status.stderr


def test_a_flood_is_put_back_whole_and_named_in_one_short_line(ws: Path):
    sh(ws, PLANT_SUB)
    before = snapshot(str(ws))
    sh(ws, "for i in $(seq 30); do echo x > sub/.git/hooks/h$i; done")
    done = put_back(before)
    assert len(done) == 30 and not [p for p in (ws / "sub/.git/hooks").iterdir() if p.name.startswith("h")
                                    and not p.name.endswith(ASIDE)]
    assert note(done).endswith("; and 22 more") and len(note(done)) < 2000


def test_what_was_put_back_is_exact(ws: Path):
    sh(ws, PLANT_SUB)
    config = (ws / "sub/.git/config").read_bytes()
    before = snapshot(str(ws))
    sh(ws, "git -C sub config core.fsmonitor x; printf garbage > .git/HEAD; git init -q n;"
           "git -C n config user.email f@x; git -C n config filter.lfs.clean 'sh -c x'")
    put_back(before)
    assert (ws / "sub/.git/config").read_bytes() == config  # the previous bytes, not a rewrite
    assert (ws / ".git/HEAD").read_text() == "ref: refs/heads/main\n"
    assert git(ws / "n", "config", "user.email").stdout == "f@x\n"  # the fixture keeps what it needs ...
    assert git(ws / "n", "config", "--get-regexp", "filter").returncode == 1  # ... and loses what runs
    assert b"filter" in (ws / f"n/.git/config{ASIDE}").read_bytes()  # the file as written, for the user


LEGITIMATE = {
    "a test fixture repository": "git init -q fx && git -C fx config user.name t && git -C fx commit -q --allow-empty -m x",
    "a bare remote and a push": "git init -q --bare remote.git && git push -q ./remote.git main",
    "a worktree": "git worktree add -q wt2",
    "a commit and a branch switch": "echo b > b && git add b && git commit -qm b && git checkout -q -b topic",
    "a symlink loop": "ln -s .. up && mkdir -p deep && ln -s ../deep deep/self",
    "a harmless config change": "git init -q fx && git -C fx config user.email x@y",
}


@pytest.mark.parametrize("case", list(LEGITIMATE))
def test_legitimate_work_is_left_alone(ws: Path, case: str):
    before = snapshot(str(ws))
    sh(ws, LEGITIMATE[case])
    assert put_back(before) == []
    assert not list(ws.rglob(f"*{ASIDE}"))


def test_nothing_is_written_through_a_link_the_command_swapped_in(ws: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config").write_text("canary\n")
    sh(ws, PLANT_SUB)
    before = snapshot(str(ws))
    sh(ws, f"mv sub/.git sub/real && ln -s {outside} sub/.git")
    line = note(put_back(before))
    assert "(sub/.git) moved aside" in line
    assert (outside / "config").read_text() == "canary\n"  # never restored through the link


def test_a_workspace_without_a_repository_given_a_bare_shape(tmp_path: Path):
    ws = tmp_path / "bare"
    ws.mkdir()
    before = snapshot(str(ws))
    sh(ws, "mkdir objects refs && echo 'ref: refs/heads/main' > HEAD && printf '[core]\\nfsmonitor=x\\n' > config")
    assert "a new bare repository at the workspace root (HEAD) moved aside" in note(put_back(before))
    assert not (ws / "HEAD").exists()


# --- the config reader: what it finds must be what git finds ---

TRICKY = {
    "[CORE]\n\tFsMonitor = x\n": {"core.fsmonitor"},
    "[core] fsmonitor = x\n": {"core.fsmonitor"},  # a key on the header's line
    "[diff \"Py\"]\n\ttextconv = cat\n": {"diff.Py.textconv"},
    "[Alias.Co]\n\tx = !sh\n": {"alias.co.x"},  # the old form: subsection lower-cased
    "[user]\n\tname = \"a\\\n\"\n[gpg]\n\tprogram = g\n": {"gpg.program"},  # a continuation inside quotes
    "[core]\r\n\tpager = \"less ; x\" # c\r\n": {"core.pager"},
    "\xef\xbb\xbf[core]\n\teditor\n": {"core.editor"},  # BOM; a key without a value
    "# [core]\n; fsmonitor = x\n[user]\n\tname = \"# not a comment\"\n": set(),
    "[submodule \"s\"]\n\tupdate = !touch m\n[submodule \"t\"]\n\tupdate = rebase\n": {"submodule.s.update"},
    "[remote \"o\"]\n\turl = x\n\tuploadpack = touch m\n": {"remote.o.uploadpack"},
}


@pytest.mark.parametrize("text", list(TRICKY))
def test_config_reader_finds_what_git_finds(tmp_path: Path, text: str):
    data = text.encode("latin-1")
    found = {e.shown() for e in parse(data) if e.runs_program()}
    assert found == TRICKY[text]
    (tmp_path / "c").write_bytes(data)
    listed = subprocess.run(["git", "config", "--file", str(tmp_path / "c"), "--list", "--name-only"],
                            capture_output=True, text=True, timeout=30)
    assert listed.returncode == 0, listed.stderr  # git reads the same file
    keys = {e.shown().lower() for e in parse(data)}
    assert keys == {k.lower() for k in listed.stdout.split()}  # the same entries, no more, no fewer
    cleaned, cut = without_running(data)
    assert sorted(cut) == sorted(TRICKY[text]) and running(cleaned) == frozenset()
    (tmp_path / "c").write_bytes(cleaned)
    kept = subprocess.run(["git", "config", "--file", str(tmp_path / "c"), "--list", "--name-only"],
                          capture_output=True, text=True, timeout=30)
    assert kept.returncode == 0 and {k.lower() for k in kept.stdout.split()} == keys - {k.lower() for k in cut}


@pytest.mark.parametrize("text", ["[core\n", "[core]\n\tx = \"open\n", "[core]\n\tx = a\\q\n", "[core]\n\tx y\n",
                                  "[c \"s]\n", "[core]\0\n", "fsmonitor = x\n"])
def test_config_git_would_refuse_is_in_doubt(tmp_path: Path, text: str):
    with pytest.raises(Doubt):
        parse(text.encode())
    assert running(text.encode()) is None
    (tmp_path / "c").write_bytes(text.encode())
    listed = subprocess.run(["git", "config", "--file", str(tmp_path / "c"), "--list"], capture_output=True,
                            timeout=30)
    # git refuses each but a key before any section, which it lists without a section: in doubt all the same
    assert (listed.returncode != 0) == (text != "fsmonitor = x\n")


def test_bang_commands_trip_it_too(ws: Path):
    """`!cmd` runs through the shell tool's execute(): the user is warned, the model's note says it."""
    from loopagent.cli.repl.bang import run_command
    from loopagent.tools.base import ToolContext
    from loopagent.tools.workspace import Workspace

    warned: list[str] = []
    shown: list[str] = []
    ctx = ToolContext(Workspace(ws), env={**os.environ, **GIT_ENV}, warn=warned.append)
    outcome, output = run_command("printf garbage > .git/HEAD; echo done", ctx, shown.append)
    assert outcome == "exit code 0" and shown == ["done"]
    assert len(warned) == 1 and "a broken HEAD (.git/HEAD) restored" in warned[0]
    assert output == f"done\n{warned[0]}\n"
    assert (ws / ".git/HEAD").read_text() == "ref: refs/heads/main\n"


def test_the_walks_cache_is_not_fooled_by_a_directory_mtime_set_back(ws: Path, tmp_path: Path, monkeypatch):
    """Listings are kept while a directory's ctime stays (a command can set mtime back, never ctime)."""
    from loopagent.sandbox import tripwire
    from tests.conftest import wait_for

    monkeypatch.setattr(tripwire, "LISTINGS", {})
    monkeypatch.setattr(tripwire, "RACY_NS", -(10**12))  # keep every listing, however recent
    deep = ws / "deep"
    deep.mkdir()
    before = snapshot(str(ws))
    assert str(deep) in tripwire.LISTINGS
    seen = deep.stat()
    probe = tmp_path / "probe"  # the file system's clock has moved past the listing's ctime
    wait_for(lambda: (probe.write_text("x"), probe.stat().st_ctime_ns > seen.st_ctime_ns)[1], timeout=5)
    sh(ws, "echo 'gitdir: /etc' > deep/.git")
    os.utime(deep, ns=(seen.st_atime_ns, seen.st_mtime_ns))  # as `touch -d` in the command would
    assert deep.stat().st_mtime_ns == seen.st_mtime_ns
    assert "(deep/.git) moved aside" in note(put_back(before))


def test_a_worktree_workspace_watches_its_git_dirs_outside_it(tmp_path: Path):
    """The workspace is a linked worktree: its git dir and the common dir lie outside it, and git reads both."""
    main = tmp_path / "main"
    main.mkdir()
    sh(main, "git init -q -b main . && echo a > a && git add a && git commit -qm a && git worktree add -q ../wt")
    wt = tmp_path / "wt"
    before = snapshot(str(wt))
    sh(wt, "mkdir planted && cp -r ../main/.git/objects ../main/.git/refs planted/"
           " && printf '[core]\\n\\tfsmonitor = x\\n' > planted/config"
           " && echo \"$PWD/planted\" > ../main/.git/worktrees/wt/commondir"
           " && printf '[alias]\\n\\tst = !x\\n' >> ../main/.git/config && echo x > ../main/.git/hooks/post-checkout")
    line = note(put_back(before))
    assert f"a changed `commondir` ({main}/.git/worktrees/wt/commondir) restored" in line
    assert f"gained alias.st ({main}/.git/config) restored" in line
    assert f"a new or changed hook ({main}/.git/hooks/post-checkout) moved aside" in line
    assert (main / ".git/worktrees/wt/commondir").read_text() == "../..\n"
    assert git(wt, "status", "--porcelain").stdout == "?? planted/\n"


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_index_gitlinks_are_what_git_lists(ws: Path, version: str):
    from loopagent.sandbox.gitindex import gitlinks

    sh(ws, "for d in sub node_modules/x/y 'with space' p/q/r; do git init -q \"$d\" &&"
           " git -C \"$d\" commit -q --allow-empty -m x; done && git add -f sub node_modules/x/y 'with space' p/q/r"
           " && mkdir -p z && echo z > z/z && git add -N z/z"  # intent-to-add: an extended flag (version 3)
           f" && git update-index --index-version {version}")
    listed = git(ws, "ls-files", "-s").stdout.splitlines()
    expected = sorted(line.split("\t", 1)[1] for line in listed if line.startswith("160000"))
    assert expected == ["node_modules/x/y", "p/q/r", "sub", "with space"]
    assert sorted(gitlinks((ws / ".git/index").read_bytes()) or ()) == expected
    assert gitlinks(b"DIRC\0\0\0\x02\0\0\0\x05" + b"\0\0\xe0\0" * 3) is None  # cut short: not read
