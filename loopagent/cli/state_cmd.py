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
    from loopagent.config import loop_home
    from loopagent.run.record import describe_sessions, describe_tree
    from loopagent.session import listing

    found = listing(loop_home(), checked(workspace))
    if not found:
        typer.echo("no saved sessions for this workspace")
    for line in (describe_tree if tree else describe_sessions)(found):
        typer.echo(printable(line))


def checkpoints(workspace: Workspace = None) -> None:
    """List the workspace's checkpoints, newest first, with what each was taken before."""
    from loopagent.checkpoint import CheckpointError
    from loopagent.run.record import describe_checkpoint

    try:
        found = timeline(workspace).list()
    except CheckpointError as exc:
        raise fail(str(exc), 1) from None
    if not found:
        typer.echo("no checkpoints for this workspace")
    for c in found:
        typer.echo(printable(describe_checkpoint(c)))


Yes = Annotated[bool, typer.Option(
    "--yes", "-y", help="Do it without asking, also when it discards changes no call made (they are saved first).")]


def undo(workspace: Workspace = None, yes: Yes = False) -> None:
    """Restore the files to the latest checkpoint; again steps one further back. Shows what changes and
    asks first when that discards changes no call made (yours)."""
    restore("undo", workspace, yes)


def redo(workspace: Workspace = None, yes: Yes = False) -> None:
    """Reverse the last undo (shows what changes; asks first when that discards changes of yours)."""
    restore("redo", workspace, yes)


def restore(kind: str, workspace: Path | None, yes: bool) -> None:
    """Show what the undo or redo will change, ask when the person's own changes would go (refused
    headless without --yes: exit 2), then do it. Declined: exit 1, nothing changed."""
    import sys

    from loopagent.checkpoint import CheckpointError
    from loopagent.checkpoint.plan import preview
    from loopagent.cli.repl.restore_plan import QUESTION, apply, asks, done_line, plan_lines

    found = timeline(workspace, writing=True)
    try:
        plan = preview(found, kind)
        if plan is None or not (plan.changes or plan.finishing):
            raise fail(f"nothing to {kind}: the files are already as they were", 1)
        if not plan.finishing:
            for line in plan_lines(plan):
                typer.echo(printable(line))
        if asks(plan) and not yes:
            mine = f"{len(plan.yours)} of these changes {'is' if len(plan.yours) == 1 else 'are'} yours"
            if not interactive(sys.stdin):
                raise fail(f"not {kind}ne: {mine}; `loop {kind} --yes` does it anyway", 2)
            if not typer.confirm(f"{QUESTION[kind]} ({mine})", default=False, err=True):
                raise fail(f"nothing {kind}ne: the files are as they were", 1)
        c = apply(found, plan)
    except CheckpointError as exc:
        raise fail(str(exc), 1) from None
    typer.echo(printable(done_line(kind, c, plan, "`loop redo`")))


def interactive(stream) -> bool:
    """Whether a person can answer on `stream` (a closed or odd stdin cannot)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def register(app: typer.Typer) -> None:
    """Add these commands to the `loop` app."""
    for command in (sessions, checkpoints, undo, redo):
        app.command()(command)
