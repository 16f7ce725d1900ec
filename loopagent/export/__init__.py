"""Exporting a session as a readable transcript: Markdown or one self-contained HTML file."""

from __future__ import annotations

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
