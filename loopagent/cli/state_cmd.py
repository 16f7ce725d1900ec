"""`loop sessions`, `loop checkpoints`, `loop undo`, `loop redo`: what runs left behind, and going back."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from loopagent.render.safe import printable

Workspace = Annotated[Path | None, typer.Option(
    "-C", "--workspace", metavar="DIR",
    help="Workspace root (default: the git repository around the current directory, else it).")]


def fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"loop: {printable(message)}", err=True)
    return typer.Exit(code)


def checked(workspace: Path | None) -> Path:
    """The workspace these commands act on: found as `loop agent` finds it, so they agree (cli/workspace.py)."""
    from loopagent.cli.workspace import find_workspace

    root, why = find_workspace(workspace, Path.cwd())
    if not root.is_dir():
        raise fail(f"workspace {root} is not a directory", 2)
    if why:
        typer.echo(f"loop: {printable(why)}", err=True)
    return root


def timeline(workspace: Path | None, writing: bool = False):
    """The workspace's checkpoints; `writing`: refuse at once when their directory cannot be written."""
    from loopagent.checkpoint import Timeline
    from loopagent.config import ConfigError, load_settings, loop_home
    from loopagent.session.catalog import unwritable

    workspace = checked(workspace)
    try:
        settings = load_settings(workspace, {})
    except (ConfigError, ValueError) as exc:
        raise fail(str(exc), 2) from None
    found = Timeline.open(loop_home(), workspace, settings.checkpoint_max_bytes, settings.checkpoint_lock_wait)
    if writing and found.repo.git_dir.is_dir() and (why := unwritable(found.repo.git_dir)):
        raise fail(why, 1)
    return found


def sessions(workspace: Workspace = None, tree: Annotated[bool, typer.Option(
        "--tree", help="Show forks indented under the sessions they branched from.")] = False) -> None:
    """List the workspace's saved sessions, newest first: id, time, steps, status, task."""
    from loopagent.cli.record import describe_sessions, describe_tree
    from loopagent.config import loop_home
    from loopagent.session import listing

    found = listing(loop_home(), checked(workspace))
    if not found:
        typer.echo("no saved sessions for this workspace")
    for line in (describe_tree if tree else describe_sessions)(found):
        typer.echo(printable(line))


def checkpoints(workspace: Workspace = None) -> None:
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


def undo(workspace: Workspace = None) -> None:
    """Restore the files to the latest checkpoint; again steps one further back."""
    from loopagent.checkpoint import CheckpointError

    try:
        c = timeline(workspace, writing=True).undo()
    except CheckpointError as exc:
        raise fail(str(exc), 1) from None
    done = f"finished the interrupted {c.finished}" if c.finished else "undone"
    typer.echo(printable(f"{done}: the files are as they were at {c.short} ({c.message}); `loop redo` reverses this"))


def redo(workspace: Workspace = None) -> None:
    """Reverse the last undo."""
    from loopagent.checkpoint import CheckpointError

    try:
        c = timeline(workspace, writing=True).redo()
    except CheckpointError as exc:
        raise fail(str(exc), 1) from None
    done = "finished the interrupted redo" if c.finished else "redone"
    typer.echo(printable(f"{done}: the files are back to {c.short} ({c.message})"))


def register(app: typer.Typer) -> None:
    """Add these commands to the `loop` app."""
    for command in (sessions, checkpoints, undo, redo):
        app.command()(command)
