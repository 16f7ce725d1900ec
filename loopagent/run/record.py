"""What a run leaves on disk: its session file and its checkpoints, opened before the agent is built.

The session writer is a listener (it records the feed); its failure reaches the loop through the
agent's `Steering.health`, and checkpoints are its `before_change` step (run/build.py `Built.assemble`).
Everything this module has to say (the session started, a repair, a session recorded elsewhere) is an
event, said through the agent once it is built (`announce`), never a print.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopagent.config import Settings, loop_home
from loopagent.events import Compacted, Event, Listener, MessageAdded, Notice, SessionStarted
from loopagent.loop import Agent
from loopagent.messages import Message, SystemMessage, UserMessage
from loopagent.run.services import Services
from loopagent.session import (
    SessionError,
    SessionWriteError,
    SessionWriter,
    Summary,
    find,
    header,
    listing,
    load,
    new_path,
)
from loopagent.session.catalog import fork_path
from loopagent.session.typed import typed

if TYPE_CHECKING:
    from loopagent.policy import Policy
    from loopagent.run.discovery import Window

CONTINUE = "Continue."


@dataclass
class Recording:
    """The session a run writes to, the history the run starts from, and its checkpoints (or None)."""

    writer: SessionWriter
    history: list[Message]
    task: str
    workspace: Path
    settings: Settings
    compacted: list[Compacted] = field(default_factory=list)  # compactions of a resumed session, in order
    checkpoints: Any = None  # a checkpoint.Recorder when checkpoints are on
    opening: UserMessage | None = None  # the task's message, added by the loop after the session_start hooks

    @property
    def id(self) -> str:
        return self.writer.id

    @property
    def path(self) -> Path:
        return self.writer.path

    emit: Listener = lambda event: None  # the agent's feed
    source: str = "default"  # where --ctx-size came from (the session event names it)
    home: Path | None = None  # $LOOP_HOME of the run (None: read it when needed)
    unnamed: bool = False  # an interactive file still called `<stamp>-session`: its first task names it
    # What opening the session found, said by `announce` once the agent is built: the session's start (and
    # a resume's repairs and missing results, a fork's messages), the notes about the context window, and
    # the system message a new session starts with.
    said: list[Event] = field(default_factory=list)
    notes: list[Notice] = field(default_factory=list)
    system: SystemMessage | None = None

    def fork(self, history: list[Message], approval: str | None = None) -> None:
        """Continue in a new session file holding `history` (/fork, /clear, a rewound conversation); its
        header names this session as its parent, at the last message of `history` (a prefix of ours), and
        `approval`, the mode in force now (the policy's: `/approval` may have changed it)."""
        task = next((typed(m.content) for m in history if isinstance(m, UserMessage)), "")
        # A session left before anything was said is removed (SessionWriter.switch): no parent to name.
        parent = {"session": self.id, "message": len(history) - 1} if self.writer.spoken else None
        home = self.home or loop_home()
        path = fork_path(home, self.workspace, self.path) if task and parent else new_path(home, self.workspace, task)
        self.writer.switch(path)
        self.emit(SessionStarted(self.id, str(path), self.settings.ctx_size, self.source, header(
            path.stem, self.workspace, self.settings.model, self.settings.base_url, task, parent,
            approval or self.settings.approval)))
        for index, message in enumerate(history):
            self.emit(MessageAdded(message, index))
        self.unnamed = not task  # a /clear: the next task names the new file, as it named the first
        if self.checkpoints is not None:
            self.checkpoints.session, self.checkpoints.next_index = self.id, len(history)
        if self.writer.health():
            raise SessionWriteError(self.writer.health())

    def services(self, policy: Policy) -> Services:
        """What the interactive REPL's slash commands use; a new branch's header names `policy`'s mode."""
        return Services(
            sessions=lambda width=None: describe_sessions(listing(self.home or loop_home(), self.workspace), width),
            fork_session=lambda history: self.fork(history, policy.mode),
            session_path=lambda: self.path,
            leave_session=self.writer.leave,
            checkpoints=CheckpointCommands(self) if self.checkpoints is not None else None,
        )


def open_recording(workspace: Path, settings: Settings, task: str | None, resume: str | None, system: str,
                   interactive: bool = False, window: Window | None = None, home: Path | None = None,
                   fork: str | None = None) -> Recording:
    """Open (or resume) the session and its checkpoints, saying nothing yet: `announce` says it through the
    agent built with the recording (run/build.py `Built.assemble`), its writer first among the listeners.

    A new session starts with the system message (and the task, unless interactive); `fork`
    (SESSION[:N]) starts one with SESSION's messages instead; `window` is the context size in force and its
    origin (None: the settings' size, by default). Raises SessionError when a session cannot
    be found or read (nothing of it stays open).
    """
    from loopagent.run.discovery import Window

    window = window or Window(settings.ctx_size, "default")
    home = home or loop_home()
    writable(home, workspace, settings.checkpoints)
    if fork and resume:
        raise SessionError("--fork and --resume cannot be combined: a fork is a new session")
    source = window.source
    if resume:
        rec = resumed(home, workspace, settings, resume, task, interactive, source)
    elif fork:
        rec = forked(home, workspace, settings, fork, task, interactive, source)
    else:
        rec = started(home, workspace, settings, task, interactive, source)
        rec.system = SystemMessage(system)
    rec.source, rec.home = source, home
    rec.notes = [Notice("note", text) for text in window.notes(settings)]
    if settings.checkpoints:
        from loopagent.checkpoint import Recorder, Timeline

        timeline = Timeline.open(home, workspace, settings.checkpoint_max_bytes, settings.checkpoint_lock_wait)
        # its notices and warnings go to the agent's feed, which `announce` hands the recording
        rec.checkpoints = Recorder(timeline, rec.id, len(rec.history), emit=lambda event: rec.emit(event))
    return rec


def announce(rec: Recording, agent: Agent) -> None:
    """Say what opening the session found through `agent` (the session's start, a resumed session's
    repairs and missing results, a fork's messages), then the notes about the context window and a new
    session's system message. Raises SessionWriteError when the session file cannot be written (then the
    writer is closed, and the run must tell its end to the listeners other than the session's)."""
    rec.emit = agent.emit
    for event in rec.said:
        agent.emit(event)
    if rec.writer.health():
        rec.writer.close()
        raise SessionWriteError(rec.writer.health())
    if rec.compacted:  # a resumed compacted session: the next request sends its summary, not its past
        agent.context.restore(rec.compacted[-1])
    for note in rec.notes:  # after the session line: the feed opens with the session
        agent.emit(note)
    if rec.system is not None:
        agent.add(rec.history, rec.system)


def writable(home: Path, workspace: Path, checkpoints: bool) -> None:
    """Refuse a run whose session (or checkpoint) directory cannot be written, before anything is asked."""
    from loopagent.session.catalog import sessions_dir, unwritable

    if why := unwritable(sessions_dir(home, workspace)):
        raise SessionError(why)
    if checkpoints and (why := unwritable(home / "checkpoints")):
        raise SessionError(f"{why} (checkpoints; --no-checkpoints runs without them)")


def started(home: Path, workspace: Path, settings: Settings, task: str | None, interactive: bool,
            source: str) -> Recording:
    """A new session: its file, and its start to say."""
    path = new_path(home, workspace, task or "")
    writer = SessionWriter.create(path)
    writer.discard_unanswered = not interactive  # a one-shot run refused before any answer leaves nothing
    head = header(path.stem, workspace, settings.model, settings.base_url, task or "", approval=settings.approval)
    rec = Recording(writer, [], task or "", workspace, settings, unnamed=interactive,
                    opening=None if interactive else UserMessage(task or ""))
    rec.said = [SessionStarted(writer.id, str(path), settings.ctx_size, source, head)]
    return rec


def resumed(home: Path, workspace: Path, settings: Settings, spec: str, task: str | None,
            interactive: bool, source: str = "default") -> Recording:
    """Load a saved session, its repairs and missing results to say, and the new message to append to it."""
    from loopagent.session.lock import SessionLock

    path = find(home, workspace, spec)
    lock = SessionLock.take(path)  # before reading: a file another process still writes is not ours to repair
    try:
        loaded = load(path)
        if not loaded.history:
            raise SessionError(f"session {loaded.id} has no messages to continue")
    except SessionError:
        lock.release()
        raise
    writer = SessionWriter.reopen(loaded.path, loaded.valid_size, lock)
    said: list[Event] = [SessionStarted(writer.id, str(loaded.path), settings.ctx_size, source)]
    recorded_in = loaded.header.get("workspace", "")
    if recorded_in and recorded_in != os.path.realpath(workspace):
        said.append(Notice("note", f"session {loaded.id} was recorded in {recorded_in}"))
    said += [Notice("repair", repair.text, repair.dropped or "") for repair in loaded.repairs]
    history = loaded.history
    for result in loaded.missing:
        history.append(result)
        said.append(MessageAdded(result, len(history) - 1))
    # Cut off while waiting for the model: the same request again, rather than two user messages in a row.
    opening = UserMessage(task or CONTINUE) if not interactive and (
        task or not isinstance(history[-1], UserMessage)) else None
    last = opening or history[-1]
    text = last.content if isinstance(last, UserMessage) else ""
    rec = Recording(writer, history, text, workspace, settings, loaded.compacted, opening=opening)
    rec.said = said
    return rec


def forked(home: Path, workspace: Path, settings: Settings, spec: str, task: str | None,
           interactive: bool, source: str) -> Recording:
    """A new session holding SESSION's messages up to N (`spec` SESSION[:N]); SESSION's file is only read."""
    from loopagent.session.family import branch, fork_spec

    name, upto = fork_spec(spec)
    parent = load(find(home, workspace, name))
    history, last = branch(parent, upto)
    path = fork_path(home, workspace, parent.path)
    writer = SessionWriter.create(path)
    head = header(path.stem, workspace, settings.model, settings.base_url, task or "",
                  {"session": parent.id, "message": last}, settings.approval)
    kept: list[Message] = list(history)
    opening = UserMessage(task or CONTINUE) if not interactive and (
        task or not isinstance(kept[-1], UserMessage)) else None
    last_message = opening or kept[-1]
    text = last_message.content if isinstance(last_message, UserMessage) else ""
    rec = Recording(writer, kept, text, workspace, settings, opening=opening)
    rec.said = [SessionStarted(writer.id, str(path), settings.ctx_size, source, head),
                *(MessageAdded(message, index) for index, message in enumerate(kept))]
    return rec


class Relabel:
    """Listener: an interactive session starts as `<time>-session`; the first task typed names it (and
    names the new file of a /clear the same way)."""

    def __init__(self, rec: Recording):
        self.rec = rec

    def __call__(self, event: object) -> None:
        if not self.rec.unnamed or not isinstance(event, MessageAdded) or not isinstance(event.message, UserMessage):
            return
        self.rec.unnamed = False
        from loopagent.session.catalog import label

        stamp = self.rec.writer.id.split("-", 1)[0]
        self.rec.writer.rename(f"{stamp}-{label(typed(event.message.content))}")
        if self.rec.checkpoints is not None:
            self.rec.checkpoints.session = self.rec.id


def describe_session(s: Summary, id_width: int = 0, status_width: int = 10, dated: bool = True) -> str:
    """One line of a session listing; the widths line a column of them up."""
    when = f"{s.created[:19].replace('T', ' ') or '?':<19}  " if dated else ""
    steps = f"{s.steps:>3} step{'' if s.steps == 1 else 's'}"
    return f"{s.id:<{id_width}}  {when}{steps:<9}  {s.status:<{status_width}}  {s.task[:60]}".rstrip()


def describe_sessions(found: list[Summary], width: int | None = None) -> list[str]:
    """The listing of `loop sessions` and /sessions: one line each, in aligned columns. Given a `width`
    (a screen), each line fits it: the date goes first when the task would get too little room (the id
    begins with the time), then the task is cut with an ellipsis; the id stays whole."""
    id_width = max((len(s.id) for s in found), default=0)
    status_width = max((len(s.status) for s in found), default=0)
    lines = [describe_session(s, id_width, status_width) for s in found]
    if width is None or all(len(line) <= width for line in lines):
        return lines
    from loopagent.render.lines import clipped

    dated = id_width + status_width + 2 + 21 + 11 + 2 + 20 <= width  # columns and gaps, then 20 of the task
    return [clipped(describe_session(s, id_width, status_width, dated), width) for s in found]


def describe_tree(found: list[Summary]) -> list[str]:
    """`loop sessions --tree`: each session with its forks indented under it, and where each branched."""
    from loopagent.session.family import family

    placed = family(found)
    names = [("   " * (depth - 1) + " └ " if depth else "") + s.id for depth, s in placed]
    id_width = max(map(len, names), default=0)
    status_width = max((len(s.status) for s in found), default=0)
    lines = []
    for name, (depth, s) in zip(names, placed, strict=True):
        line = describe_session(replace(s, id=name), id_width, status_width)
        if s.parent:  # under its parent the message is enough; a root's parent is gone (or elsewhere)
            kind = f"task {s.parent['agent']}" if s.parent.get("agent") else "fork"
            origin = f"{kind} " if s.parent.get("agent") or not depth else ""
            origin += "" if depth else f"of {s.parent['session']} "
            line += f"  ({origin}at msg {s.parent['message']})"
        lines.append(line)
    return lines


def describe_checkpoint(c: Any) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(c.time))
    at = f"msg {c.index}" if c.index is not None else c.kind
    return f"{c.short}  {when}  {at:<8}  {c.message}"


class CheckpointCommands:
    """/checkpoints, /undo, /redo, /diff and /rewind for the REPL: each returns what to show."""

    def __init__(self, rec: Recording):
        self.rec = rec

    @property
    def timeline(self) -> Any:
        return self.rec.checkpoints.timeline

    def lines(self) -> list[str]:
        found = self.timeline.list()
        return [describe_checkpoint(c) for c in found] or ["no checkpoints yet"]

    def undo(self) -> str:
        from loopagent.checkpoint import NothingToDo

        try:
            c = self.timeline.undo()
        except NothingToDo as exc:
            return str(exc)
        done = f"finished the interrupted {c.finished}" if c.finished else "undone"
        return f"{done}: the files are as they were at {c.short} ({c.message})"

    def redo(self) -> str:
        from loopagent.checkpoint import NothingToDo

        try:
            c = self.timeline.redo()
        except NothingToDo as exc:
            return str(exc)
        done = "finished the interrupted redo" if c.finished else "redone"
        return f"{done}: the files are back to {c.short} ({c.message})"

    def diff(self) -> str:
        return self.timeline.diff_since(self.rec.id)

    def rewind(self, index: int) -> str:
        c = self.timeline.rewind(self.rec.id, index)
        if c is None:
            return "no file changes since that message"
        return f"files restored to {c.short} ({c.message}); /redo reverses this"
