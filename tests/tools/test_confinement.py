"""Workspace confinement: no path the model sends may read or write outside the workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loopagent.errors import ToolError
from loopagent.tools.base import ToolContext
from loopagent.tools.files import EditFile, EditParams, ReadFile, ReadParams, WriteFile, WriteParams
from loopagent.tools.search import Grep, GrepParams, ListFiles, ListParams
from loopagent.tools.workspace import Workspace
from tests.conftest import wait_for


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "outside.txt").write_text("secret outside\n")
    return root


def ctx(root: Path) -> ToolContext:
    return ToolContext(Workspace(root))


def read(root: Path, path: str) -> str:
    return ReadFile().run(ReadParams(path=path), ctx(root)).content


def write(root: Path, path: str, content: str = "x\n") -> str:
    return WriteFile().run(WriteParams(path=path, content=content), ctx(root)).content


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "../outside.txt", "src/../../outside.txt",
                                  "~/.bashrc", "/"])
def test_reads_outside_are_refused(ws, path):
    with pytest.raises(ToolError, match="outside the workspace"):
        read(ws, path)


@pytest.mark.parametrize("path", ["../outside.txt", "/tmp/loop-escape.txt", "src/../../new.txt"])
def test_writes_outside_are_refused_and_nothing_is_written(ws, path):
    before = (ws.parent / "outside.txt").read_text()
    with pytest.raises(ToolError, match="outside the workspace"):
        write(ws, path, "pwned\n")
    assert (ws.parent / "outside.txt").read_text() == before
    assert not (ws.parent / "new.txt").exists() and not Path("/tmp/loop-escape.txt").exists()


def test_symlink_to_etc_is_refused_for_read_write_list_and_grep(ws):
    (ws / "etc").symlink_to("/etc")
    c = ctx(ws)
    with pytest.raises(ToolError, match="outside the workspace"):
        read(ws, "etc/passwd")
    with pytest.raises(ToolError, match="outside the workspace"):
        write(ws, "etc/loop-test-file", "x")
    with pytest.raises(ToolError, match="outside the workspace"):
        ListFiles().run(ListParams(path="etc"), c)
    with pytest.raises(ToolError, match="outside the workspace"):
        Grep().run(GrepParams(pattern="root", path="etc"), c)
    # Walking the workspace does not follow the link either.
    assert "passwd" not in Grep().run(GrepParams(pattern="root:"), c).content
    assert "etc/" not in ListFiles().run(ListParams(), c).content


def test_symlinked_parent_directory_pointing_outside_is_refused(ws, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data.txt").write_text("outside data\n")
    (ws / "src" / "linked").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ToolError, match="outside the workspace"):
        read(ws, "src/linked/data.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        write(ws, "src/linked/deep/new.txt")  # the new file would land outside via the link
    assert not (elsewhere / "deep").exists()


def test_file_symlink_and_dangling_symlink_outside_are_refused(ws, tmp_path):
    (ws / "innocent.txt").symlink_to(tmp_path / "outside.txt")
    (ws / "dangling.txt").symlink_to(tmp_path / "not-yet.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        read(ws, "innocent.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        write(ws, "dangling.txt", "created through a dangling link")
    assert not (tmp_path / "not-yet.txt").exists()
    with pytest.raises(ToolError, match="outside the workspace"):
        EditFile().run(EditParams(path="innocent.txt", old_string="secret", new_string="x"), ctx(ws))
    assert (tmp_path / "outside.txt").read_text() == "secret outside\n"


def test_links_and_dot_dots_that_stay_inside_are_fine_and_shown_relative(ws):
    (ws / "alias").symlink_to(ws / "src", target_is_directory=True)
    assert "print('hi')" in read(ws, "alias/app.py")
    assert "print('hi')" in read(ws, "src/../src/./app.py")
    assert "print('hi')" in read(ws, str(ws / "src" / "app.py"))  # absolute but inside
    out = write(ws, str(ws / "src" / "new.py"), "a = 1\n")
    assert out == "created src/new.py: new file, 1 line"
    assert str(ws) not in out


def test_the_workspace_given_through_a_symlink_still_confines(tmp_path, ws):
    link = tmp_path / "ws-link"
    link.symlink_to(ws, target_is_directory=True)
    assert "print('hi')" in read(link, "src/app.py")
    with pytest.raises(ToolError, match="outside"):
        read(link, "../outside.txt")


def test_nul_byte_and_empty_path_are_errors(ws):
    for bad in ["", "src/app.py\x00.txt"]:
        with pytest.raises(ToolError, match="empty or contains a NUL"):
            read(ws, bad)


def test_symlink_loop_is_an_error_not_a_crash(ws):
    os.symlink("loop-b", ws / "loop-a")
    os.symlink("loop-a", ws / "loop-b")
    with pytest.raises(ToolError):
        read(ws, "loop-a")


# ---- protected paths: .git, .loop, $LOOP_HOME ------------------------------------------------------

@pytest.fixture
def repo(ws: Path) -> Path:
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (ws / ".loop").mkdir()
    (ws / ".loop" / "config.json").write_text('{"approval": "ask"}\n')
    (ws / "lnk").symlink_to(".git", target_is_directory=True)
    return ws


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("path", [
    ".git/config", "./.git/../.git/config", "sub/../.git/hooks/pre-commit", "lnk/config", "lnk/hooks/post-checkout",
    ".git", ".git/new-file", "src/.git/config", ".loop/config.json", ".loop/prompts/x.md", "src/../.loop/new.json",
])
def test_write_and_edit_of_git_and_loop_are_refused_in_any_spelling(repo, path):
    before = snapshot(repo)
    c = ctx(repo)
    with pytest.raises(ToolError, match=r"is protected: loop never writes \.(git|loop)/ .*change it yourself"):
        WriteFile().run(WriteParams(path=path, content='[core]\n\tfsmonitor = "touch pwned"\n'), c)
    with pytest.raises(ToolError, match="is protected"):
        EditFile().run(EditParams(path=path, old_string="bare", new_string="fsmonitor"), c)
    assert snapshot(repo) == before
    assert "is protected" in WriteFile().preview(WriteParams(path=path, content="x"), c)


def test_git_and_loop_can_still_be_read(repo):
    assert "bare = false" in read(repo, ".git/config")
    assert "bare = false" in read(repo, "lnk/config")
    assert "approval" in read(repo, ".loop/config.json")


def test_absolute_path_into_git_is_refused(repo):
    with pytest.raises(ToolError, match="is protected"):
        write(repo, str(repo / ".git" / "hooks" / "pre-commit"), "#!/bin/sh\ntouch pwned\n")
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.parametrize("dot_git", ["file", "symlink"])
def test_a_git_dir_elsewhere_in_the_workspace_is_protected_too(ws, dot_git):
    """`.git` as a `gitdir:` file (worktree, submodule) or a link: git runs the config found there."""
    store = ws / "store"
    (store / "worktrees" / "w").mkdir(parents=True)
    (store / "config").write_text("[core]\n")
    (store / "worktrees" / "w" / "commondir").write_text("../..\n")
    if dot_git == "file":
        (ws / ".git").write_text("gitdir: store/worktrees/w\n")
    else:
        (ws / ".git").symlink_to("store/worktrees/w", target_is_directory=True)
    for path in ["store/config", "store/worktrees/w/HEAD", "store/hooks/pre-commit"]:
        with pytest.raises(ToolError, match="is protected: it is the repository's git directory"):
            write(ws, path, "[core]\n\tfsmonitor = x\n")
    assert (store / "config").read_text() == "[core]\n"
    assert write(ws, "src/ok.py", "a = 1\n").startswith("created src/ok.py")


def test_loop_home_inside_the_workspace_is_protected_under_any_name(tmp_path):
    home = tmp_path / "home"
    (home / "state").mkdir(parents=True)
    (home / "state" / "config.json").write_text("{}\n")
    (home / "alias").symlink_to("state", target_is_directory=True)
    c = ToolContext(Workspace(home, protected=(home / "state",)))
    for path in ["state/config.json", "alias/config.json", "state/sessions/x.jsonl", str(home / "state" / "y")]:
        with pytest.raises(ToolError, match="is protected: it is inside loop's home"):
            WriteFile().run(WriteParams(path=path, content="{}"), c)
    assert (home / "state" / "config.json").read_text() == "{}\n"
    assert sorted(p.name for p in (home / "state").iterdir()) == ["config.json"]
    WriteFile().run(WriteParams(path="notes.md", content="fine\n"), c)
    assert (home / "notes.md").read_text() == "fine\n"


# ---- hard links ----------------------------------------------------------------------------------

@pytest.fixture
def linked(ws: Path) -> Path:
    """ws/notes.txt is a hard link to ../outside.txt."""
    os.link(ws.parent / "outside.txt", ws / "notes.txt")
    return ws


def allowing(root: Path, *rules: tuple[str, str]) -> ToolContext:
    return ToolContext(Workspace(root), explicitly_allows=lambda tool, rel: (tool, rel) in rules)


def test_hard_link_is_refused_for_read_write_and_edit(linked):
    c = ctx(linked)
    with pytest.raises(ToolError, match=r'notes.txt has 2 hard links.*outside the workspace.*"allow": \["read_file\(notes.txt\)"\]'):
        ReadFile().run(ReadParams(path="notes.txt"), c)
    with pytest.raises(ToolError, match=r'"allow": \["write_file\(notes.txt\)"\]'):
        WriteFile().run(WriteParams(path="notes.txt", content="pwned\n"), c)
    with pytest.raises(ToolError, match=r'"allow": \["edit_file\(notes.txt\)"\]'):
        EditFile().run(EditParams(path="notes.txt", old_string="secret", new_string="pwned"), c)
    assert "secret outside" not in WriteFile().preview(WriteParams(path="notes.txt", content="x"), c)
    assert (linked.parent / "outside.txt").read_text() == "secret outside\n"


def test_an_explicit_allow_reads_a_hard_link_and_a_write_breaks_the_link(linked):
    c = allowing(linked, ("read_file", "notes.txt"), ("write_file", "notes.txt"))
    assert "secret outside" in ReadFile().run(ReadParams(path="notes.txt"), c).content
    WriteFile().run(WriteParams(path="notes.txt", content="mine now\n"), c)
    assert (linked / "notes.txt").read_text() == "mine now\n"
    assert (linked.parent / "outside.txt").read_text() == "secret outside\n"  # a new inode, not through the link
    assert os.stat(linked / "notes.txt").st_nlink == 1


# ---- real_rel: what the policy's path rules are matched against -----------------------------------

def test_real_rel_resolves_links_and_dot_dots_and_keeps_a_new_tail(ws, tmp_path):
    (ws / ".env").write_text("KEY=1\n")
    (ws / "innocent").symlink_to(".env")
    (ws / "alias").symlink_to("src", target_is_directory=True)
    (ws / "out").symlink_to(tmp_path, target_is_directory=True)
    w = Workspace(ws)
    assert w.real_rel("innocent") == ".env"
    assert w.real_rel(str(ws / "innocent")) == ".env"
    assert w.real_rel("src/../innocent") == ".env"
    assert w.real_rel("alias/new/deep.py") == "src/new/deep.py"
    assert w.real_rel("missing/../src/app.py") == "src/app.py"
    assert w.real_rel(".") == "."
    for outside in ["out/outside.txt", "../outside.txt", "/etc/passwd", "alias/../../x", ""]:
        assert w.real_rel(outside) is None, outside


def test_symlink_chains_are_followed_up_to_forty_hops(ws):
    (ws / "l0").symlink_to("src/app.py")
    for i in range(1, 41):
        (ws / f"l{i}").symlink_to(f"l{i - 1}")
    assert Workspace(ws).real_rel("l39") == "src/app.py"
    with pytest.raises(ToolError, match="too many levels of symbolic links"):
        read(ws, "l40")


# ---- symlink swaps: what was checked is what is opened ---------------------------------------------

@pytest.fixture
def swap(ws: Path, tmp_path: Path) -> tuple[Path, Path]:
    """ws/d/file.txt, and a directory outside with the same file name holding a canary."""
    (ws / "d").mkdir()
    (ws / "d" / "file.txt").write_text("inside\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "file.txt").write_text("CANARY-OUTSIDE\n")
    return ws / "d", elsewhere


def swap_in_link(d: Path, elsewhere: Path) -> None:
    d.rename(d.with_name("d.real"))
    d.symlink_to(elsewhere, target_is_directory=True)


def test_a_link_swapped_in_after_the_check_is_not_followed_for_reading(ws, swap):
    d, elsewhere = swap
    w = Workspace(ws)
    real = w.resolve("d/file.txt")  # the check: d is a real directory here
    swap_in_link(d, elsewhere)  # the attacker's move between check and open
    with pytest.raises(ToolError, match="path changed while it was opened"):
        w.read_bytes(real)
    with pytest.raises(ToolError, match="path changed while it was opened"):
        w.lstat(real)


def test_a_link_swapped_in_after_the_check_is_not_followed_for_writing(ws, swap):
    d, elsewhere = swap
    w = Workspace(ws)
    real = w.resolve_writable("d/file.txt")
    swap_in_link(d, elsewhere)
    with pytest.raises(ToolError, match="path changed while it was opened"):
        w.write_bytes(real, b"pwned\n")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["file.txt"]  # no temporary file either
    assert (elsewhere / "file.txt").read_text() == "CANARY-OUTSIDE\n"


def test_a_final_component_swapped_for_a_link_is_not_followed(ws, swap):
    d, elsewhere = swap
    w = Workspace(ws)
    real = w.resolve("d/file.txt")
    (d / "file.txt").unlink()
    (d / "file.txt").symlink_to(elsewhere / "file.txt")
    with pytest.raises(ToolError, match="path changed while it was opened"):
        w.read_bytes(real)
    with pytest.raises(ToolError, match="changed while being written"):
        w.write_bytes(real, b"pwned\n")
    assert (elsewhere / "file.txt").read_text() == "CANARY-OUTSIDE\n"
    assert sorted(p.name for p in d.iterdir()) == ["file.txt"]


def test_a_thread_flipping_a_directory_and_a_link_never_leaks_the_outside_file(ws, swap):
    """The race run for real: reads through read_file while another thread swaps d <-> link."""
    import threading

    d, elsewhere = swap
    real_dir = d.with_name("d.real")
    stop, flips = threading.Event(), [0]

    def flip() -> None:
        while not stop.is_set():
            d.rename(real_dir)
            d.symlink_to(elsewhere, target_is_directory=True)
            d.unlink()
            real_dir.rename(d)
            flips[0] += 1

    c = ctx(ws)
    seen: set[str] = set()
    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    try:
        wait_for(lambda: flips[0] > 0)  # on a loaded machine the flipper may start late
        reads = 0
        while reads < 2000 or ("     1\tinside" not in seen and reads < 20000):
            reads += 1
            try:
                seen.add(ReadFile().run(ReadParams(path="d/file.txt"), c).content)
            except ToolError as exc:
                seen.add(type(exc).__name__)
    finally:
        stop.set()
        flipper.join(timeout=10)
    assert not flipper.is_alive() and flips[0] > 0
    assert not any("CANARY-OUTSIDE" in s for s in seen), seen
    assert "     1\tinside" in seen  # the reads did run, not just fail


def test_real_rel_of_a_path_that_cannot_resolve_is_its_lexical_form_when_that_stays_inside(ws):
    os.symlink("loop-b", ws / "loop-a")
    os.symlink("loop-a", ws / "loop-b")
    w = Workspace(ws)
    assert w.real_rel("loop-a") == "loop-a"  # the read then fails with a result, not the policy
    assert w.real_rel("src/app.py/x") == "src/app.py/x"
    assert w.real_rel("src/app.py/../../../x") is None
