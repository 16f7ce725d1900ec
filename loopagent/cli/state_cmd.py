"""`loop sessions`, `loop checkpoints`, `loop undo`, `loop redo`: what runs left behind, and going back."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from loopagent.render.safe import printable

Workspace = Annotated[Path, typer.Option("-C", "--workspace", help="Workspace root.")]


def fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"loop: {printable(message)}", err=True)
    return typer.Exit(code)


def checked(workspace: Path) -> Path:
    if not workspace.is_dir():
        raise fail(f"workspace {workspace} is not a directory", 2)
    return workspace


def timeline(workspace: Path):
    from loopagent.checkpoint import Timeline
    from loopagent.config import ConfigError, load_settings, loop_home

    try:
        settings = load_settings(checked(workspace), {})
    except (ConfigError, ValueError) as exc:
        raise fail(str(exc), 2) from None
    return Timeline.open(loop_home(), workspace, settings.checkpoint_max_bytes)


def sessions(workspace: Workspace = Path(".")) -> None:
    """List the workspace's saved sessions, newest first: id, time, steps, status, task."""
    from loopagent.cli.record import describe_session
    from loopagent.config import loop_home
    from loopagent.session import listing

    found = listing(loop_home(), checked(workspace))
    if not found:
        typer.echo("no saved sessions for this workspace")
    for s in found:
        typer.echo(printable(describe_session(s)))


def checkpoints(workspace: Workspace = Path(".")) -> None:
    """List the workspace's checkpoints, newest first, with what each was taken before."""
    from loopagent.checkpoint import CheckpointError
    from loopagent.cli.record import describe_checkpoint

    try:
        found = timeline(workspace).list()
    except CheckpointError as exc:
        raise fail(str(exc), 1) from None
    if not found:
        typer.echo("no checkpoints for this workspace")
    for c in found:
        typer.echo(printable(describe_checkpoint(c)))


def undo(workspace: Workspace = Path(".")) -> None:
    """Restore the files to the latest checkpoint; again steps one further back."""
    from loopagent.checkpoint import CheckpointError

    try:
        c = timeline(workspace).undo()
    except CheckpointError as exc:
        raise fail(str(exc), 1) from None
    typer.echo(printable(f"undone: the files are as they were at {c.short} ({c.message}); `loop redo` reverses this"))


def redo(workspace: Workspace = Path(".")) -> None:
    """Reverse the last undo."""
    from loopagent.checkpoint import CheckpointError

    try:
        c = timeline(workspace).redo()
    except CheckpointError as exc:
        raise fail(str(exc), 1) from None
    typer.echo(printable(f"redone: the files are back to {c.short} ({c.message})"))


def register(app: typer.Typer) -> None:
    """Add these commands to the `loop` app."""
    for command in (sessions, checkpoints, undo, redo):
        app.command()(command)
