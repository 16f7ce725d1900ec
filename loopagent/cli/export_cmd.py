"""`loop export SESSION [--format md|html] [-o FILE]`: a saved session as a readable transcript."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from loopagent.cli.shell_words import export_formats, session_ids
from loopagent.cli.state_cmd import Workspace, checked, fail


def export(
    session: Annotated[str, typer.Argument(
        metavar="SESSION", help='"last", an id (or a prefix of one), or a path.', autocompletion=session_ids)],
    fmt: Annotated[str | None, typer.Option(
        "--format", metavar="md|html", help="md or html (one self-contained file). [default: from -o, else md]", autocompletion=export_formats)] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", metavar="FILE",
                                                help="Write to FILE. [default: stdout]")] = None,
    workspace: Workspace = None,
) -> None:
    """Write a saved session as a transcript: messages, tool calls, results, diffs, status, totals."""
    from loopagent.config import loop_home
    from loopagent.errors import SessionError
    from loopagent.export import export as render
    from loopagent.export import format_for, write_whole
    from loopagent.session import find

    try:
        kind = format_for(fmt, output)
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    try:
        path = find(loop_home(), checked(workspace), session)
    except SessionError as exc:  # a session that is not there is a bad argument
        raise fail(str(exc), 2) from None
    try:
        text = render(path, kind)
    except SessionError as exc:  # there, but unreadable or corrupt
        raise fail(str(exc), 1) from None
    if output is None:
        sys.stdout.write(text)
        return
    try:
        write_whole(output, text)  # a full disk leaves the old file whole, never half a transcript
    except OSError as exc:
        raise fail(f"cannot write {output}: {(exc.strerror or str(exc)).lower()}", 1) from None
    typer.echo(f"wrote {output}", err=True)


def register(app: typer.Typer) -> None:
    """Add `loop export` to the `loop` app."""
    app.command()(export)
