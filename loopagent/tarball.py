"""Extracting a tar without letting a member land outside its directory, on every Python 3.11.

Python 3.11.4 added extraction filters; Debian 12's 3.11.2 has none, and a plain `extractall`
there writes `../` names, absolute names and files through a symlink that points out. Here every
member is checked just before it is written (so a link extracted earlier is seen), with the rules
of the "tar" filter: a symlink may point anywhere (a repository may hold one), nothing may be
written outside the directory; devices and links to outside files are refused too.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path


def extract(archive: tarfile.TarFile, dest: Path) -> None:
    """Extract every member of `archive` into `dest`; tarfile.TarError at the first member that would
    be written outside it (the members before it stay written)."""
    root = os.path.realpath(dest)
    if hasattr(tarfile, "tar_filter"):
        archive.extractall(dest, filter=lambda member, path: tarfile.tar_filter(checked(member, root), path))
        return
    for member in archive:  # one at a time: each check sees the links extracted before it
        archive.extract(checked(member, root), dest, set_attrs=not member.isdir())


def checked(member: tarfile.TarInfo, root: str) -> tarfile.TarInfo:
    """`member` when writing it stays inside `root` (as the file system is now), else tarfile.TarError."""
    def inside(path: str) -> bool:
        return os.path.commonpath([root, os.path.realpath(path)]) == root

    if os.path.isabs(member.name) or not inside(os.path.join(root, member.name)):
        raise tarfile.TarError(f"{member.name!r} would be written outside {root}")
    if member.isdev():
        raise tarfile.TarError(f"{member.name!r} is a device file")
    if member.islnk() and (os.path.isabs(member.linkname) or not inside(os.path.join(root, member.linkname))):
        raise tarfile.TarError(f"{member.name!r} is a hard link to a file outside {root}")
    return member
