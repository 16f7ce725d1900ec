"""Exporting a session as a readable transcript: Markdown or one self-contained HTML file."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

FORMATS = ("md", "html")


def export(path: Path, fmt: str) -> str:
    """The transcript of the session file at `path` in `fmt` (md or html); raises SessionError."""
    from loopagent.export.transcript import transcript

    t = transcript(path)
    if fmt == "html":
        from loopagent.export.html import page

        return page(t)
    from loopagent.export.markdown import markdown

    return markdown(t)


def format_for(fmt: str | None, target: Path | None) -> str:
    """The format asked for, else the one the output file's suffix names, else md; ValueError when unknown."""
    if fmt is None:
        return "html" if target is not None and target.suffix.lower() in (".html", ".htm") else "md"
    if fmt.lower() not in FORMATS:
        raise ValueError(f"--format must be md or html, not {fmt!r}")
    return fmt.lower()


def write_whole(target: Path, text: str) -> None:
    """Write `text` to `target` all or nothing: into a temporary file beside it, then renamed over it.

    A full disk, a file-size limit or a kill mid-write leaves the old `target` as it was (and no
    temporary file); a reader never sees half a transcript. A symbolic link is written through, as
    `open` would, an existing file keeps its permissions, and a device or FIFO is simply written to.
    Raises OSError.
    """
    data = text.encode("utf-8")
    try:
        special = not stat.S_ISREG(os.stat(target).st_mode)
    except FileNotFoundError:
        special = False
    if special:  # `-o /dev/stdout`, a FIFO: nothing to rename over, and nothing there to keep
        with open(target, "wb") as out:
            out.write(data)
        return
    if target.is_symlink():
        target = Path(os.path.realpath(target))
    while True:
        temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:  # 0o666 through the umask, like any new file
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            break
        except FileExistsError:
            continue
    try:
        try:
            if target.exists():
                os.fchmod(fd, target.stat().st_mode & 0o7777)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
