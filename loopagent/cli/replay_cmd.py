"""`loop replay SESSION`: a saved session's model turns run again with the real tools, as a regression test.

The turns run headless on a fresh temporary copy of the workspace as it was at the session's first
checkpoint (or a copy of -C DIR), under the recorded approval mode; then every call's outcome is
compared with the recording (loopagent/rerun.py). Nothing is written to the user's workspace,
sessions or checkpoints: the copy and everything in it is removed at the end.

A session file that is not one of the user's own (not in $LOOP_HOME/sessions) was written by someone
else: its header's approval mode, its recorded answers and its workspace path are that person's
claims. It runs no looser than the user's own configured mode (unless `--approval` says so), no
recorded "yes" answers a question, and it needs -C DIR (its recorded workspace is not the user's
choice of what to copy). The sandbox may be off or missing; then the approval mode is the only wall.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from loopagent.cli.replay_mode import Refused


@dataclass
class Source:
    """A session to replay and where its files come from."""

    loaded: object  # loopagent.session.Loaded
    directory: Path | None  # -C DIR: copy this instead of the first checkpoint
    home: Path
    own: bool = True  # one of the user's saved sessions, not a file someone handed over
    approval: str | None = None  # --approval MODE: the user's own word on the mode


def replay(
    session: Annotated[str, typer.Argument(metavar="SESSION", help='"last", a session id, or a session file.')],
    workspace: Annotated[Path | None, typer.Option(
        "-C", "--workspace", metavar="DIR",
        help="Replay on a copy of DIR instead of the workspace as it was at the session's first checkpoint.")] = None,
    strict: Annotated[bool, typer.Option(
        "--strict", help="Also require the same result text (durations and the workspace path masked).")] = False,
    approval: Annotated[str | None, typer.Option(
        "--approval", metavar="MODE",
        help="ask | edits | all: run the calls under MODE; a session that is not yours otherwise runs no "
             "looser than your configured mode.")] = None,
) -> None:
    """Run a saved session's model turns again with the real tools and compare every call's outcome.

    Exit 0 when each call has its recorded outcome (same calls, same is_error, same shell exit codes),
    1 naming the first divergence, 2 when SESSION or DIR cannot be replayed.
    """
    from loopagent.policy import MODES
    from loopagent.render.safe import printable

    try:
        if approval is not None and approval not in MODES:
            raise Refused(f"--approval must be ask, edits or all, not {approval!r}")
        code = replay_session(session, workspace, strict, approval)
    except Refused as exc:
        typer.echo(f"loop: {printable(str(exc))}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add `loop replay` to the `loop` app."""
    app.command("replay")(replay)


def replay_session(spec: str, directory: Path | None, strict: bool, approval: str | None = None) -> int:
    """Replay the session `spec` names; the exit code (0 same, 1 diverged, 130 interrupted)."""
    import tempfile

    from loopagent.run.build import Host

    host = Host.current()
    loaded = resolve(spec, directory, host)
    source = Source(loaded, directory, host.home, own_session(loaded.path, host.home), approval)
    with tempfile.TemporaryDirectory(prefix="loop-replay-") as tmp:
        recorded_in = Path(str(source.loaded.header.get("workspace") or "workspace"))
        name = recorded_in.name if recorded_in.name not in ("", ".", "..") else "workspace"
        copy = Path(tmp) / name  # the recorded directory's name: a tool's output may show it
        prepare(source, copy, host)
        from loopagent.cli.replay_run import rerun

        return rerun(source, copy, strict, host)


def resolve(spec: str, directory: Path | None, host) -> object:
    """The loaded session `spec` names, looked up like --resume does (the current workspace, then DIR)."""
    from loopagent.cli.workspace import find_workspace
    from loopagent.session import SessionError, find, load

    if directory is not None and not directory.is_dir():
        raise Refused(f"{directory} is not a directory")
    root, _ = find_workspace(None, host.cwd, host.home)
    places = [root] + ([directory] if directory is not None else [])
    error: SessionError | None = None
    for place in places:
        try:
            loaded = load(find(host.home, place, spec))
            break
        except SessionError as exc:
            error = error or exc
    else:
        raise Refused(str(error))
    from loopagent.messages import UserMessage

    if not any(isinstance(m, UserMessage) for m in loaded.history):
        raise Refused(f"session {loaded.id} has no task to replay")
    return loaded


def prepare(source: Source, copy: Path, host) -> None:
    """Fill `copy`: DIR copied, else the files of the session's first checkpoint (else the workspace now)."""
    if source.directory is not None:
        copy_tree(source.directory, copy)
        return
    if not source.own:  # its header's workspace (and checkpoint) is someone else's claim, maybe "/" or ~
        raise Refused(f"{source.loaded.path} is not one of your saved sessions: give -C DIR to replay it on a "
                      "copy of DIR")
    from loopagent.checkpoint import CheckpointError, Timeline

    loaded = source.loaded
    recorded_in = Path(str(loaded.header.get("workspace", "")))
    timeline = Timeline.open(source.home, recorded_in) if str(recorded_in) else None
    commit = timeline.first_of(loaded.id) if timeline is not None else None
    if timeline is not None and commit is not None:
        copy.mkdir()
        try:
            timeline.repo.export(commit, copy)
        except CheckpointError as exc:
            raise Refused(str(exc)) from None
        git_of(recorded_in, copy)
        return
    if not recorded_in.is_dir():
        raise Refused(f"session {loaded.id} has no checkpoint and its workspace {recorded_in} is gone: "
                      "give -C DIR to replay it on a copy of DIR")
    # No checkpoint: the session changed nothing (or ran with --no-checkpoints). Its workspace as it is now.
    from loopagent.render.safe import printable

    print(printable(f"loop: session {loaded.id} has no checkpoint; replaying on a copy of {recorded_in} as it "
                    "is now"), file=host.err)
    copy_tree(recorded_in, copy)


def git_of(workspace: Path, copy: Path) -> None:
    """The workspace's own `.git` (as it is now) into the copy: checkpoints never hold it, and a session's
    `git status` or `git diff` must find a repository as it did when it was recorded."""
    import shutil

    dot_git = workspace / ".git"
    if (copy / ".git").exists() or not (dot_git.is_dir() or dot_git.is_file()):
        return
    try:
        if dot_git.is_dir() and not dot_git.is_symlink():
            shutil.copytree(dot_git, copy / ".git", symlinks=True)
        else:
            shutil.copy2(dot_git, copy / ".git")  # a worktree's `gitdir:` file
    except (OSError, shutil.Error) as exc:
        raise Refused(f"cannot copy {dot_git}: {exc}") from None


def copy_tree(src: Path, dest: Path) -> None:
    """A copy of `src` (symlinks kept as links); a failure is a refusal, not a traceback."""
    import shutil

    try:
        shutil.copytree(src, dest, symlinks=True)
    except (OSError, shutil.Error) as exc:
        raise Refused(f"cannot copy {src}: {exc}") from None


def own_session(path: Path, home: Path) -> bool:
    """Whether `path` is one of the user's saved sessions ($LOOP_HOME/sessions), not a file from elsewhere."""
    import os

    store = os.path.realpath(home / "sessions")
    return os.path.realpath(path).startswith(store + os.sep)
