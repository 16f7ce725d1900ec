"""The gitlinks of a git index, read without running git: where the user's `git status` recurses.

A nested repository added with `git add` (a submodule, or an embedded repository) is a gitlink
entry (mode 160000) in the index, and `git status` in the workspace runs git inside it, reading
its config. The tripwire's walk skips dependency directories and stops at a depth; a gitlink
anywhere is followed all the same (tripwire.py). The format: git's Documentation/gitformat-index.
"""

from __future__ import annotations

import os
import stat
import time

from loopagent.sandbox.gitconfig import Doubt, parse

GITLINK_MODE = b"\x00\x00\xe0\x00"  # 0o160000, big-endian: absent from the bytes, no gitlink (the common case)
MAX_BYTES = 64 << 20
KEPT: dict[str, tuple[tuple[int, int, int, int], tuple[str, ...]]] = {}
RACY_NS = 2_000_000_000


def gitlinks_of(index_path: str, config: bytes | None) -> tuple[str, ...]:
    """The gitlink paths of the index at `index_path` (() when there is none or it cannot be read),
    kept while the file's inode and ctime stay the same."""
    try:
        st = os.lstat(index_path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return ()
        key = (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_size)
        hit = KEPT.get(index_path)
        if hit is not None and hit[0] == key:
            return hit[1]
        with open(index_path, "rb") as f:
            data = f.read(MAX_BYTES)
    except OSError:
        return ()
    found = gitlinks(data, hash_size(config)) or ()
    if time.time_ns() - st.st_ctime_ns > RACY_NS:
        if len(KEPT) > 1000:
            KEPT.clear()
        KEPT[index_path] = (key, found)
    return found


def hash_size(config: bytes | None) -> int:
    """20 (SHA-1), or 32 when the repository's config says `extensions.objectFormat = sha256`."""
    try:
        entries = parse(config or b"")
    except Doubt:
        return 20
    sha256 = any(e.section == "extensions" and e.key == "objectformat" and (e.value or "").lower() == "sha256"
                 for e in entries)
    return 32 if sha256 else 20


def gitlinks(data: bytes, hash_size: int = 20) -> tuple[str, ...] | None:
    """Paths of the gitlink entries in index bytes; None when they are not an index this reads
    (versions 2 to 4)."""
    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version, count = int.from_bytes(data[4:8], "big"), int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        return None
    if GITLINK_MODE not in data:
        return ()
    fixed = 40 + hash_size + 2  # ten 32-bit fields, the object name, the flags
    found, at, previous = [], 12, b""
    try:
        for _ in range(count):
            mode = data[at + 24:at + 28]
            flags = int.from_bytes(data[at + 40 + hash_size:at + fixed], "big")
            name_at = at + fixed + (2 if version >= 3 and flags & 0x4000 else 0)
            if version == 4:  # the name: strip N bytes from the previous one, then add a suffix
                strip, name_at = varint(data, name_at)
                end = data.index(b"\0", name_at)
                if strip > len(previous):
                    return None
                name = previous[:len(previous) - strip] + data[name_at:end]
                at = end + 1
            else:  # NUL-padded to a multiple of eight bytes
                end = data.index(b"\0", name_at)
                name = data[name_at:end]
                at += (end - at + 8) & ~7
            if mode == GITLINK_MODE:
                found.append(os.fsdecode(name))
            previous = name
    except (IndexError, ValueError):
        return None
    return tuple(found)


def varint(data: bytes, at: int) -> tuple[int, int]:
    """git's offset varint (varint.c): the value and where the bytes after it begin."""
    c = data[at]
    value = c & 0x7F
    while c & 0x80:
        at += 1
        c = data[at]
        value = ((value + 1) << 7) | (c & 0x7F)
    return value, at + 1
