"""One ACP session: an open loop run (run/ `open_run`) with its session file, driven one prompt at a time.

The run is opened with the client's approver (so the run is attended: loop's policy decides, only its `ask`
reaches the client) and nothing drawn on stdout. Each prompt is one `run.turn` in a worker thread with its
own cancel token, which `session/cancel` sets: the stream, a running tool (its process tree killed) or a
pending permission request end as with Ctrl+C.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from acp import RequestError, schema

from loopagent.acp.ask import OPTIONS, ClientApprover
from loopagent.acp.bridge import Bridge, ClientBuffers, Outbox
from loopagent.acp.feed import Feed
from loopagent.acp.progress import ChildProgress
from loopagent.cancel import Cancel
from loopagent.policy import MODES

log = logging.getLogger("loop.acp")

# The approval modes as an editor lists them; MODES (policy/decision.py) is the one list of which exist,
# strictest first, so a mode added there is offered here (a description, when it has one, from this table).
DESCRIPTIONS = {
    "plan": "Read and plan: nothing is changed",
    "ask": "Ask before every change and every command",
    "edits": "Edit files without asking; ask before commands",
    "all": "Edit files and run commands without asking (commands inside the sandbox)",
}
STOP_REASONS = {
    "completed": "end_turn", "check_failed": "end_turn", "approval_required": "end_turn",
    "output_invalid": "end_turn", "token_limit": "max_tokens",
    "step_limit": "max_turn_requests", "time_limit": "max_turn_requests", "loop_detected": "max_turn_requests",
    "aborted": "cancelled",
}
WITHHELD = ("content_filter", "refusal", "safety", "recitation")  # client/assemble.py STOPPED_ENDS


def stop_reason(end: Any) -> str:
    """The ACP stop reason of a turn's end (DESIGN.md); a failure outside the model's control (the server,
    a broken stream, the session file) is a JSON-RPC error naming it."""
    if end.status == "incomplete_model_turn":
        if any(f'"{word}"' in end.message or f"'{word}'" in end.message for word in WITHHELD):
            return "refusal"
        if "output limit" in end.message:
            return "max_tokens"
    if end.status in STOP_REASONS:
        return STOP_REASONS[end.status]
    raise RequestError.internal_error({"details": end.message or end.status})


@dataclass
class Client:
    """What the client offered at `initialize`, and the connection to it."""

    conn: Any
    writer: Any = None  # the connection's stream, for writing many updates at once (Outbox.send_all)
    read_files: bool = False
    write_files: bool = False


class Session:
    """One open run behind an ACP session id (loop's session id)."""

    def __init__(self, client: Client, loop: asyncio.AbstractEventLoop):
        self.client, self.loop = client, loop
        self.bridge = Bridge(loop)
        self.stack = ExitStack()
        self.run: Any = None
        self.id = ""
        self.outbox: Outbox | None = None
        self.cancel: Cancel | None = None  # the running turn's
        self.idle = threading.Event()
        self.idle.set()
        self.plan_switched = False  # plan mode was switched on or off since the last message (set_mode)

    # -- opening ------------------------------------------------------------------------------------

    def open(self, spec: Any, host: Any) -> None:
        """Open the run (blocking: config, sandbox, MCP servers, the session file). Raises UsageError or
        SessionError (run/run.py `open_run`)."""
        from loopagent.run.run import open_run

        root = str(spec.workspace.resolve())
        # the session's id and its turn's token exist once the run is open and a turn runs: asked for then
        self.buffers = ClientBuffers(self.bridge, self.client.conn, lambda: self.id, lambda: self.cancel,
                                     self.client.read_files, self.client.write_files)
        self.feed = Feed(self.post, root, self.text_of, lambda: self.buffers.writes)
        self.approver = ClientApprover(self.bridge, self.ask, root, self.feed.asked_id, self.text_of,
                                       lambda: self.run.agent.tools.executor.describe(), self.feed.settled)
        editor = self.buffers if self.client.read_files or self.client.write_files else None
        self.run = self.stack.enter_context(open_run(spec, host, [self.feed], approver=self.approver,
                                                     editor=editor))
        self.id = self.run.rec.id
        if self.run.built.children is not None:  # a task child's steps as updates of its call
            self.run.built.children.watch = ChildProgress(self.post, self.feed.task_call)
        self.run.rec.writer.discard_unanswered = False  # the id was given to the client: the file stays

    def start(self) -> None:
        """Start sending updates (on the event loop's thread, once the run is open)."""
        self.outbox = Outbox(self.client.conn, self.id, self.loop, self.client.writer)

    def post(self, update: Any) -> None:
        if self.outbox is not None:
            self.outbox.post(update)

    async def ask(self, request: schema.ToolCallUpdate) -> Any:
        """session/request_permission, once every update before it has been sent (its tool_call first)."""
        assert self.outbox is not None
        await self.outbox.flush()
        return await self.client.conn.request_permission(session_id=self.id, tool_call=request, options=OPTIONS)

    def text_of(self, path: str) -> str | None:
        """A file's current text for a diff block: the editor's buffer when it serves them, else the disk's."""
        workspace = self.run.agent.tools.workspace
        try:
            real = workspace.resolve(path)
            data = workspace.read_if_exists(real, tool="read_file")
        except Exception:
            return None
        return None if data is None else data.decode("utf-8", errors="replace")

    def with_mentions(self, text: str) -> str:
        """`text` with each `@path` attached as the REPL attaches it (a real read_file, confined and judged);
        blocking: the editor may serve the file."""
        from loopagent.compose.mentions import attach, with_attachments

        attached = attach(self.run.agent, text)
        for note in attached.notes:
            log.info("%s", note)
        return with_attachments(text, attached)

    def skills(self) -> dict[str, str]:
        """The run's skills (those `$NAME` and `/skill:NAME` load), name -> description."""
        from loopagent.skills import SkillBook

        book = self.run.agent.steering.skills
        return {s.name: s.description for s in book.found.skills} if isinstance(book, SkillBook) else {}

    # -- modes --------------------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        return self.run.agent.policy.mode

    def modes(self) -> schema.SessionModeState:
        return schema.SessionModeState(current_mode_id=self.mode, available_modes=[
            schema.SessionMode(id=m, name=m, description=DESCRIPTIONS.get(m)) for m in MODES])

    def set_mode(self, mode: str) -> None:
        """Switch the approval mode (as /approval does); an unknown mode or one looser than the project
        file's is an invalid-params error. Into or out of plan mode the model is told with the next message,
        as the REPL's /plan tells it (the conversation stays: the plan is the last answer)."""
        before = self.mode
        if why := self.run.agent.policy.switch(mode):
            raise RequestError.invalid_params({"modeId": mode, "details": why})
        if (mode == "plan") != (before == "plan"):  # a switch back before any message: nothing to tell
            self.plan_switched = not self.plan_switched
        self.post(schema.CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode))

    # -- turns --------------------------------------------------------------------------------------

    def claim(self) -> None:
        """Mark the session busy; a prompt or command while one runs is an invalid request."""
        if not self.idle.is_set():
            raise RequestError.invalid_request({"details": "a prompt is already running in this session"})
        self.idle.clear()

    async def turn(self, text: str, attached: list[str] | None = None) -> str:
        """One prompt to its end; the ACP stop reason. Raises RequestError when a turn is running or the run
        failed outside the model's control (the server, the session file)."""
        self.claim()
        self.cancel = cancel = Cancel()
        try:
            end = await asyncio.to_thread(self.turn_in_thread, text, attached or [], cancel)
        finally:
            assert self.outbox is not None
            await self.outbox.flush()
        return stop_reason(end)

    def turn_in_thread(self, text: str, attached: list[str], cancel: Cancel) -> Any:
        """The turn as the REPL runs one (cli/repl/repl.py `turn`): the loop reads `$NAME` skills in what was
        typed, while the model gets it with its mentions and embedded resources attached."""
        try:
            message = "\n\n".join([*self.mode_note(), self.with_mentions(text), *attached])
            return self.run.turn(text, cancel, message)
        finally:
            self.cancel = None
            self.idle.set()

    def mode_note(self) -> list[str]:
        """What the next message tells the model of a switch into or out of plan mode (the REPL's /plan note)."""
        from loopagent.compose.notes import OFF_NOTE, ON_NOTE

        switched, self.plan_switched = self.plan_switched, False
        if not switched:
            return []
        return [ON_NOTE if self.mode == "plan" else OFF_NOTE.format(mode=self.mode)]

    def stop(self) -> None:
        """session/cancel: end the running turn, if any."""
        cancel = self.cancel
        if cancel is not None:
            cancel.set()

    async def command(self, name: str, args: str) -> str:
        """A slash command of content.COMMANDS: its answer, shown as the agent's message."""
        self.claim()
        try:
            return await asyncio.to_thread(self.command_in_thread, name, args)
        finally:
            self.cancel = None
            self.idle.set()

    def command_in_thread(self, name: str, args: str) -> str:
        if name == "compact":
            self.cancel = Cancel()
            done = self.run.agent.compact(self.run.rec.history, self.cancel, args)
            return "compacted the conversation" if done is not None else "nothing to compact yet"
        checkpoints = self.run.rec.services(self.run.agent.policy).checkpoints
        if checkpoints is None:
            return "checkpoints are off (--no-checkpoints)"
        answer = {"undo": checkpoints.undo, "redo": checkpoints.redo, "diff": checkpoints.diff,
                  "checkpoints": lambda: "\n".join(checkpoints.lines())}[name]
        return answer() or "no changes"

    # -- closing ------------------------------------------------------------------------------------

    def close(self) -> None:
        """End a running turn, wait for it, then close the run (session file, lock, MCP servers)."""
        self.stop()
        if not self.idle.wait(10):
            log.warning("session %s: the turn did not end within 10 s of its cancel", self.id)
        if self.outbox is not None:
            self.outbox.close()
        self.stack.close()


def host_for(cwd: Path) -> Any:
    """The process as a run sees it, with the session's directory as its working directory; nothing is
    drawn on stdout, which belongs to the protocol."""
    import sys

    from loopagent.run.build import Host

    return replace(Host.current(), cwd=cwd, out=sys.stderr)
