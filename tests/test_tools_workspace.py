"""Workspace confinement: no path the model sends may read or write outside the workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loopagent.tools.base import ToolContext, ToolError
from loopagent.tools.files import EditFile, EditParams, ReadFile, ReadParams, WriteFile, WriteParams
from loopagent.tools.search import Grep, GrepParams, ListFiles, ListParams
from loopagent.tools.workspace import Workspace


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
    assert out == "created src/new.py: new file, 1 lines"
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
