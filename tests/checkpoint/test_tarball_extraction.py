"""Tar extraction stays inside its directory, with Python's extraction filters and without them (3.11.2)."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from loopagent.tarball import extract


def archive(*members: tuple[str, str, str]) -> tarfile.TarFile:
    """A tar of (kind, name, data-or-link) members: kind "file", "sym" or "hard"."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for kind, name, value in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(value)
                tar.addfile(info, io.BytesIO(value.encode()))
            else:
                info.type = tarfile.SYMTYPE if kind == "sym" else tarfile.LNKTYPE
                info.linkname = value
                tar.addfile(info)
    buffer.seek(0)
    return tarfile.open(fileobj=buffer, mode="r")


@pytest.fixture(params=["filters", "no filters"])
def python(request, monkeypatch):
    if request.param == "no filters":  # as on Debian 12's Python 3.11.2
        monkeypatch.delattr(tarfile, "tar_filter", raising=False)
    elif not hasattr(tarfile, "tar_filter"):
        pytest.skip("this Python has no extraction filters")
    return request.param


@pytest.mark.parametrize("members", [
    [("file", "../escape.txt", "x")],
    [("file", "/tmp/absolute-escape.txt", "x")],
    [("sym", "out", ".."), ("file", "out/escape.txt", "x")],  # a file written through a link that points out
    [("hard", "hard", "../escape.txt")],
], ids=["dotdot", "absolute", "through-a-symlink", "hardlink-out"])
def test_a_member_that_would_land_outside_is_refused(python, members, tmp_path: Path):
    dest = tmp_path / "in"
    dest.mkdir()
    canary = tmp_path / "escape.txt"
    if members[0][0] == "hard":  # a hard link needs its target to exist
        canary.write_text("kept\n")
    with pytest.raises(tarfile.TarError):
        extract(archive(*members), dest)
    assert not Path("/tmp/absolute-escape.txt").exists() and not (dest / "hard").exists()
    assert canary.read_text() == "kept\n" if members[0][0] == "hard" else not canary.exists()


def test_files_and_links_inside_are_extracted(python, tmp_path: Path):
    dest = tmp_path / "in"
    dest.mkdir()
    extract(archive(("file", "src/a.py", "print(1)\n"), ("sym", "src/b.py", "a.py"),
                    ("sym", "etc-link", "/etc"), ("hard", "src/c.py", "src/a.py")), dest)
    assert (dest / "src" / "a.py").read_text() == "print(1)\n"
    assert (dest / "src" / "b.py").is_symlink() and (dest / "src" / "b.py").read_text() == "print(1)\n"
    assert os.readlink(dest / "etc-link") == "/etc"  # a link may point anywhere; nothing is written through it
    assert (dest / "src" / "c.py").read_text() == "print(1)\n"
