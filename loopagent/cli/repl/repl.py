"""The interactive REPL: a prompt (prompt-toolkit), turns of the agent, slash commands, Ctrl+C.

A session file that can no longer be written ends the REPL after the turn it broke: one line
on stderr (the run's `error`), exit 1, the files and the session up to that point kept.
Ctrl+C during a turn sets the turn's cancel token (run/interrupts.py): the stream closes, the
running tools stop, every open call is answered "cancelled by the user" and the prompt returns.
SIGTERM or SIGHUP does the same and then ends the REPL (143 / 129). While a turn runs, what the
person types is read without echo and queued (cli/repl/typeahead.py): when the turn ends, a queued slash
command runs and queued text is sent as the next task, each echoed; Ctrl+D typed meanwhile leaves.
`@path` attaches a file (compose/mentions.py), `!cmd` runs a command as the person (cli/repl/bang.py), `/NAME`
sends a prompt template (compose/templates.py), Ctrl+X Ctrl+E or /edit opens $VISUAL/$EDITOR on the input.
Leaving takes a deliberate key: Ctrl+D on an empty line, /exit, or a second Ctrl+C within `WINDOW`
seconds (the first says so); a Ctrl+C that cancels a turn, or lands as one ends, never leaves. The
last line names the saved session and the command that continues it.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import ThreadedCompleter
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings

from loopagent.cancel import Cancel
from loopagent.cli.repl import commands
from loopagent.cli.repl.complete import ReplCompleter, add_tab, server_models
from loopagent.cli.repl.slash import tokens_label
from loopagent.cli.repl.state import ReplState
from loopagent.cli.repl.typeahead import EXIT, PausingApprover, TypeAhead
from loopagent.config import loop_home
from loopagent.events import AssistantDone, Event, RunEnd
from loopagent.messages import UserMessage
from loopagent.run.interrupts import Stopped

if TYPE_CHECKING:
    from loopagent.run.interrupts import Trap
    from loopagent.run.run import Run


ALONE = ("/", "!")  # a queued line starting so is a command of its own, never joined to a message
WINDOW = 2.0  # seconds within which a second Ctrl+C at the prompt leaves
HINT = "press Ctrl+C again to exit (or Ctrl+D)"


def key_bindings(interrupt: Callable[[], bool] | None = None) -> KeyBindings:
    """Enter sends; Esc+Enter or a trailing backslash starts a new line; Ctrl+C clears the input, or at an
    empty prompt asks `interrupt` whether to leave (None: it leaves)."""
    kb = KeyBindings()

    @kb.add("escape", "enter")
    def _newline(event) -> None:
        event.current_buffer.insert_text("\n")

    @kb.add("enter")
    def _enter(event) -> None:
        buf = event.current_buffer
        if buf.document.text_before_cursor.endswith("\\"):
            buf.delete_before_cursor(1)
            buf.insert_text("\n")
        else:
            buf.validate_and_handle()

    @kb.add("c-x", "c-e")
    def _editor(event) -> None:  # the saved text becomes the input, to read over before Enter sends it
        event.current_buffer.open_in_editor(validate_and_handle=False)

    @kb.add("c-c")
    def _interrupt(event) -> None:
        if event.current_buffer.text:
            event.current_buffer.reset()
        elif event.app.is_done:
            return  # a second key of the same read after the prompt already ended
        elif interrupt is None or interrupt():
            event.app.exit(exception=EOFError())  # leave, as Ctrl+D does

    return kb


@dataclass
class Repl(ReplState):
    """The prompt loop over the state the commands share (state.py)."""

    pending: list[str] = field(default_factory=list)  # lines typed during the last turn, run before the next prompt
    armed: float | None = None  # when a Ctrl+C at the prompt said how to leave (a second within WINDOW leaves)
    opened: Run | None = None  # the open run over the same agent and history: its agent becomes the REPL's variant

    def __post_init__(self) -> None:
        # What is typed during a turn waits for the turn's end (it is never slipped in between two
        # steps: the person cannot see when that would happen, and a `y` meant for a question is no task).
        self.typeahead = TypeAhead(self.renderer)
        # The REPL's variant of the run's agent: its questions pause the type-ahead, and it observes the feed.
        steering = self.agent.steering
        if steering.approver is not None:
            steering = replace(steering, approver=PausingApprover(steering.approver, self.typeahead))
        self.agent = replace(self.agent, steering=steering, listeners=(*self.agent.listeners, self.observe))
        if self.opened is not None:
            self.opened.agent = self.agent  # the run's turns are the REPL's agent's from now on
        # What the next request would send: a resumed compacted session counts its summary, not its past.
        self.context_used = self.agent.context.tokens(self.agent.context.view(self.history))

    def observe(self, event: Event) -> None:
        """Keeps what the toolbar and /tokens show."""
        name = type(event).__name__
        if isinstance(event, AssistantDone) and event.message.usage:
            self.context_used = event.message.usage.total
        elif name in ("TurnTokens", "AgentStart"):
            self.turns.append(event)
        elif name == "Compacted":
            self.context_used = event.tokens_after

    def toolbar(self) -> str:
        return (f" {self.settings.model} · approval {self.agent.policy.mode} · "
                f"context {tokens_label(self.context_used)}/{tokens_label(self.settings.ctx_size)} ")

    def completer(self) -> ReplCompleter:
        """Commands, the values of /approval and /model, and @paths of the workspace."""
        from loopagent.policy import MODES

        workspace = getattr(getattr(self.agent.tools, "workspace", None), "root", None)
        names = {name: cmd.help for name, cmd in commands.COMMANDS.items()}
        names.update({name: t.help for name, t in commands.templates_of(self).items()})
        skills = commands.skills_of(self)
        names.update({f"{commands.SKILL}{name}": f"skill: {text[:50]}" for name, text in skills.items()})
        return ReplCompleter(names, workspace, {
            "/approval": lambda: list(MODES),
            "/model": lambda: [self.settings.model, *server_models(self.settings.base_url, self.api_key())],
        }, skills)

    def api_key(self) -> str:
        key = self.settings.api_key
        return key.get_secret_value() if key else ""

    def interrupt(self, above_prompt: bool = False) -> bool:
        """A Ctrl+C that cancelled nothing: True when it is the second within WINDOW seconds (leave), else
        the hint is shown (above the prompt while one is drawn) and the window opens."""
        now = time.monotonic()
        if self.armed is not None and now - self.armed <= WINDOW:
            return True
        self.armed = now
        if above_prompt:
            from prompt_toolkit.application import run_in_terminal

            run_in_terminal(lambda: self.renderer.say(HINT, "yellow"))
        else:
            self.renderer.say(HINT, "yellow")
        return False

    def watch_held(self) -> None:
        """As a prompt starts: a Ctrl+C that came as a signal just before it took the keys counts now."""
        from prompt_toolkit.application import get_app

        app = get_app()

        async def presses() -> None:  # runs once the prompt reads keys (raw mode)
            for _ in range(self.trap.take_held() if self.trap is not None else 0):
                if self.interrupt(above_prompt=True):
                    app.exit(exception=EOFError())
                    return

        app.create_background_task(presses())

    def run(self) -> int:
        """Read and run until /exit, Ctrl+D at an empty prompt or a second Ctrl+C (0); then say how to resume."""
        path = loop_home() / "history"
        path.parent.mkdir(parents=True, exist_ok=True)
        kb = key_bindings(lambda: self.interrupt(above_prompt=True))
        add_tab(kb)
        prompt: PromptSession[str] = PromptSession(
            history=FileHistory(str(path)), completer=ThreadedCompleter(self.completer()), key_bindings=kb,
            bottom_toolbar=self.toolbar, complete_while_typing=True,
        )
        self.renderer.say("loop: type a task; /help lists commands; Esc+Enter for a new line; Ctrl+D exits.",
                          "dim")
        self.show_resumed()
        try:
            code = self.loop(prompt)
        except Stopped as exc:  # SIGTERM or SIGHUP at the prompt
            code = 128 + exc.signum
        finally:
            if leave := self.services.leave_session:
                leave()  # a session in which nothing was said is not kept
        self.farewell()
        return code

    def farewell(self) -> None:
        """The saved session's id and the command that continues it (nothing when no session was kept)."""
        from loopagent.cli.repl.recap import resume_command, session_of

        session_id, path = session_of(self)
        if not session_id or path is None or not path.exists() or self.agent.steering.health():
            return
        root = getattr(getattr(self.agent.tools, "workspace", None), "root", None)
        self.renderer.say(f"session {session_id} saved; resume with: {resume_command(session_id, root)}", "dim",
                          whole=True)

    def show_resumed(self) -> None:
        """A resumed session says which it is, its task, when it was last active and its last exchanges."""
        if not any(isinstance(m, UserMessage) for m in self.history):
            return
        from loopagent.cli.repl.recap import WIDTH, recap, session_of

        session_id, path = session_of(self)
        for line in recap(self.history, session_id or "?", path, width=min(self.renderer.width, WIDTH)):
            self.renderer.say(line, "dim")

    def loop(self, prompt: PromptSession[str]) -> int:
        while True:
            self.renderer.close()
            try:
                if self.trap is not None:
                    self.trap.hold()  # again after each prompt: it puts Python's own SIGINT handler back
                    held = self.trap.take_held()  # Ctrl+C between two prompts, each a press
                    if any(self.interrupt() for _ in range(held)):
                        return 0
                text = self.next_line(prompt)
            except KeyboardInterrupt:  # a SIGINT before `hold()` took over: a press like any other
                if self.interrupt():
                    return 0
                continue
            except EOFError:
                return 0
            code = self.handle(text, prompt)
            if code is not None:
                return code

    def handle(self, text: str, prompt: PromptSession[str]) -> int | None:
        """One line: a template, a slash command, a `!` command or a message; an exit code ends the REPL."""
        template = commands.template_text(self, text) if text.startswith("/") else None
        if template is not None:  # a template's text is a message, whatever it begins with (never a command)
            text = template.strip()
            if not text:
                return None
            self.renderer.say(f"sending: {text.splitlines()[0][:100]}", "dim")
        elif text.startswith("/"):
            return commands.dispatch(self, text, prompt)
        elif text.startswith("!"):
            from loopagent.cli.repl.bang import bang

            bang(self, text[1:])
            return None
        if not text:
            return None
        self.turn(text)
        if self.agent.steering.health():  # the session cannot be written: said once (stderr); the files stay
            return 1
        stopping = self.trap.stopping() if self.trap else None
        if stopping:  # SIGTERM or SIGHUP during the turn: the turn is over, and so is the REPL
            return 128 + stopping
        return None

    def next_line(self, prompt: PromptSession[str]) -> str:
        """What was queued during the last turn (a slash command alone, text lines together), else the prompt."""
        if not self.pending:
            default, self.prefill = self.prefill, ""
            return prompt.prompt("> ", default=default, pre_run=self.watch_held).strip()
        lines = [self.pending.pop(0)]
        while not lines[0].startswith(ALONE) and self.pending and not self.pending[0].startswith(ALONE):
            lines.append(self.pending.pop(0))
        verb = "running" if lines[0].startswith(ALONE) else "sending"
        for line in lines:
            self.renderer.say(f"queued, {verb}: {line}", "yellow")
        return "\n".join(lines)

    def turn(self, text: str) -> RunEnd:
        """One task: the agent runs until it answers or stops; what was typed meanwhile waits in `pending`."""
        message = self.message(text)  # added by the loop, after the first turn's session_start hooks
        self.typeahead.start()
        try:
            with self.trap.turn() if self.trap else nullcontext(Cancel()) as cancel:
                end = self.agent.run(self.history, text, cancel, UserMessage(message))  # as Run.turn does
            self.armed = None  # a Ctrl+C that stopped this turn opens no window to leave
            if cancel.signal == signal.SIGINT and end.status != "aborted" and self.trap is not None:
                self.trap.held.append(signal.SIGINT)  # pressed as the turn ended: it counts at the prompt, like one between turns
        finally:
            self.typeahead.stop()
            self.renderer.close()
        self.prefill, self.typeahead.typing = self.typeahead.typing, ""
        queued = self.typeahead.take()
        if end.status == "aborted":  # what was typed during a cancelled turn goes back to the prompt
            if EXIT in queued:  # Ctrl+D still means leave
                self.pending.append(EXIT)
            queued = [q for q in queued if q != EXIT]
            self.prefill = "\n".join([*queued, self.prefill]).strip()
        else:
            self.pending.extend(queued)
        from loopagent.run.hints import hint_for

        if hint := hint_for(end, self.settings.api_key is not None):  # a server that failed: what to do
            self.renderer.say(f"hint: {hint}", "dim")
        return end

    def message(self, text: str) -> str:
        """What the model gets for `text`: the outputs of `!` commands run since, `text`, its `@` attachments."""
        from loopagent.compose.mentions import attach, with_attachments

        attached = attach(self.agent, text)
        for note in attached.notes:
            self.renderer.say(note, "dim" if note.startswith("attached") else "yellow")
        notes, self.context_notes = self.context_notes, []
        return "\n\n".join([*notes, with_attachments(text, attached)])


def interact(run: Run, trap: Trap) -> int:
    """The REPL over an open run (run/launch.py calls it for a run without a task on a terminal)."""
    return Repl(run.agent, run.history, run.settings, run.renderer, services=run.services(), trap=trap,
                opened=run).run()
