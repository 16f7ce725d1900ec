"""An open run: the agent with its session file (and the file's lock), checkpoints, hooks and MCP servers,
owned together from `open_run` to the end of its `with` block, so a front-end gets a run in one call and
leaves nothing running or locked after it. Every front-end is a caller of it: the one-shot run and the REPL
(run/launch.py, cli/repl/), `loop acp`, and `loop replay`, whose run records nothing (`RunSpec.record`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from loopagent.events import Listener, RunEnd
from loopagent.messages import Message, Usage, UserMessage
from loopagent.render.safe import printable
from loopagent.run.build import Built, Host, configure, prepare
from loopagent.run.preflight import check_window
from loopagent.run.spec import RunSpec

if TYPE_CHECKING:
    from loopagent.cancel import Cancel
    from loopagent.config import Settings
    from loopagent.loop import Agent, Approver
    from loopagent.run.record import Recording
    from loopagent.run.services import Services


@dataclass
class Run:
    """A run `open_run` made: its parts (`built`), its session (`rec`; None when it records nothing) and the
    agent built once for them."""

    built: Built
    rec: Recording | None  # None: a run that records nothing (RunSpec.record False: loop replay)
    host: Host
    # The agent its turns run: the one built for the run, or a front-end's variant of it (the same parts; the
    # REPL's asks through its type-ahead and observes the feed).
    agent: Agent = field(init=False)
    history: list[Message] = field(init=False)  # the conversation: the session's, or, unrecorded, in memory only

    def __post_init__(self) -> None:
        if self.built.agent is None:
            raise RuntimeError("a run is made of a built agent (Built.assemble)")
        self.agent = self.built.agent
        self.history = self.rec.history if self.rec is not None else []

    @property
    def settings(self) -> Settings:
        return self.built.settings

    @property
    def renderer(self) -> Any:
        """The terminal renderer the run draws on (None under --json, or for a front-end that shows it itself)."""
        return self.built.renderer

    def services(self) -> Services:
        """What the REPL's commands use of the session file and the checkpoints (none when nothing is recorded);
        a new branch's header names the mode the policy is in then."""
        from loopagent.run.services import Services

        return self.rec.services(self.agent.policy) if self.rec is not None else Services()

    def turn(self, text: str | None, cancel: Cancel, message: str | None = None) -> RunEnd:
        """One turn: the user's `text`, or None for what the run was opened with (its task; a resumed run's
        "Continue." or the request it was cut off in). `message`: what the model is sent for `text` when it
        differs (the REPL's, with its `@` attachments). Raises SessionWriteError when the session file
        cannot be written."""
        if text is None:
            if self.rec is None:
                raise ValueError("a run that records nothing is given its text")
            return self.agent.run(self.history, self.rec.task, cancel, self.rec.opening)
        return self.agent.run(self.history, text, cancel, UserMessage(text if message is None else message))

    def add(self, message: Message) -> None:
        """`message` into the conversation as it was said before (a replayed recording's), told to the listeners."""
        self.agent.add(self.history, message)

    def answer(self, task: str, cancel: Cancel) -> RunEnd:
        """A turn over the conversation as it stands, its last message the person's, put there with `add`;
        `task` names the turn (a replayed recording's next message)."""
        return self.agent.run(self.history, task, cancel)


@contextmanager
def open_run(spec: RunSpec, host: Host, listeners: Sequence[Listener] = (), prompt: bool = False,
             approver: Approver | None = None, editor: Any = None, model: Any = None,
             answers: Approver | None = None) -> Iterator[Run]:
    """Prepare `spec`'s agent under `host`, check its window, open its session and build the agent; when the
    block ends the session file is closed (its lock given up) and the MCP servers end. `prompt`: the caller
    can prompt a person, so a run without a task on a terminal is the REPL's. `approver`: a front-end that
    asks its own way and shows the run itself (loop acp): the run is attended without a terminal, opened
    without a task, and nothing is drawn on `host.out`; `editor`: the editor's buffers the file tools use
    (tools/workspace.py `Workspace.editor`). `model`: the model client instead of the one the settings name,
    and `answers`: who answers the questions of a run that stays headless and shown as it is (loop replay: the
    recording's turns, the very call objects it compares with, and the recorded answers to them).

    A `spec` that records nothing (`record` False) opens no session file and no checkpoints and skips the
    window check: its conversation is the one its caller adds (`Run.add`), not the system prompt checked here.

    Raises UsageError for input that cannot run (exit 2, nothing written), SessionError when the session
    cannot be opened (its end already told to stderr and the listeners that are not the session's)."""
    from loopagent.errors import UsageError
    from loopagent.session import SessionError

    built = prepare(configure(spec, host), spec, host, list(listeners), approver, editor)
    try:
        if built.interactive and not prompt:
            raise UsageError("give a TASK (the interactive REPL needs a terminal)")
        if model is not None or answers is not None:
            # a copy, as replay always made: the task tool's spawner keeps the parts prepare gave it
            built = replace(built, model=built.model if model is None else model,
                            approver=built.approver if answers is None else answers)
        if not spec.record:
            built.assemble()
            yield Run(built, None, host)
            return
        check_window(built, spec.task)  # before the session file: a run that cannot start leaves nothing behind
        try:
            rec = open_session(built, spec, host)
        except SessionError as exc:
            session_failed(built.listeners_for(None), exc, host)
            raise
        try:
            yield Run(built, rec, host)
        finally:
            rec.writer.close()
    finally:
        built.close()  # the MCP servers end with the run, not at the interpreter's exit


def open_session(built: Built, spec: RunSpec, host: Host) -> Recording:
    """The session file (new, or resumed with repairs) and checkpoints (run/record.py), then the agent that
    records to them, built once (`built.agent`), then the session's start said through it. Raises
    SessionError when the session cannot be opened or written."""
    from loopagent.run.record import announce, open_recording

    rec = open_recording(spec.workspace, built.settings, spec.task, spec.resume, built.system, built.interactive,
                         home=host.home, window=built.fitted.window, fork=spec.fork)
    announce(rec, built.assemble(rec))
    return rec


def session_failed(listeners: tuple[Listener, ...], exc: Exception, host: Host | None = None) -> int:
    """A session file that cannot be read or written: one line on stderr, a `result` of status error (told to
    `listeners`), exit 1."""
    print(f"loop: {printable(str(exc))}", file=host.err if host is not None else sys.stderr)
    end = RunEnd("error", 0, Usage(), str(exc))
    for listener in listeners:
        listener(end)
    return end.exit_code
