"""The interactive REPL: a prompt (prompt-toolkit), turns of the agent, slash commands, Ctrl+C.

A session file that can no longer be written ends the REPL after the turn it broke: one line
on stderr (the run's `error`), exit 1, the files and the session up to that point kept.
Ctrl+C during a turn sets the turn's cancel token (cli/interrupts.py): the stream closes, the
running tools stop, every open call is answered "cancelled by the user" and the prompt returns.
SIGTERM or SIGHUP does the same and then ends the REPL (143 / 129). While a turn runs, what the
person types is read without echo and queued (steering); it is delivered at the next turn boundary.
"""

from __future__ import annotations

import os
import select
import sys
import termios
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings

from loopagent.cancel import Cancel
from loopagent.cli import slash
from loopagent.cli.interrupts import Stopped, Trap
from loopagent.config import Settings, loop_home
from loopagent.events import AssistantDone, Event, RunEnd
from loopagent.loop import Agent
from loopagent.messages import Message, UserMessage
from loopagent.render.terminal import TerminalRenderer


class TypeAhead:
    """Reads what is typed while a turn runs (no echo, Ctrl+C still interrupts) into a queue."""

    def __init__(self, renderer: TerminalRenderer, fd: int | None = None):
        self.renderer = renderer
        self.fd = sys.stdin.fileno() if fd is None else fd
        self.queue: list[str] = []
        self.typing = ""
        self.lock = threading.Lock()
        self.saved: list[Any] | None = None
        self.thread: threading.Thread | None = None
        self.stopping = threading.Event()

    def start(self) -> None:
        if not os.isatty(self.fd) or self.thread is not None:
            return
        self.saved = termios.tcgetattr(self.fd)
        quiet = termios.tcgetattr(self.fd)
        quiet[3] &= ~(termios.ICANON | termios.ECHO)  # ISIG stays: Ctrl+C still sends SIGINT
        quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 1, 0
        termios.tcsetattr(self.fd, termios.TCSANOW, quiet)
        self.stopping.clear()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        if self.thread is None:
            return
        self.stopping.set()
        self.thread.join(timeout=2)
        self.thread = None
        if self.saved is not None:
            termios.tcsetattr(self.fd, termios.TCSANOW, self.saved)  # TCSANOW: unread input stays
            self.saved = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Normal line input for a moment (an approval question)."""
        running = self.thread is not None
        self.stop()
        try:
            yield
        finally:
            if running:
                self.start()

    def take(self) -> list[str]:
        """The queued messages, now being sent (the loop calls this at a turn boundary)."""
        with self.lock:
            taken, self.queue = self.queue, []
        self.renderer.set_queued([])
        for text in taken:
            self.renderer.say(f"> {text}", "bold")
        return taken

    def _read(self) -> None:
        while not self.stopping.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                self._keys(os.read(self.fd, 1024).decode("utf-8", errors="replace"))

    def _keys(self, keys: str) -> None:
        if "\x1b" in keys:  # arrow keys and other escape sequences: no line editing here
            return
        for key in keys:
            if key in "\r\n":
                text, self.typing = self.typing.strip(), ""
                if text:
                    with self.lock:
                        self.queue.append(text)
                    self.renderer.set_queued(list(self.queue))
            elif key in "\x7f\b":
                self.typing = self.typing[:-1]
            elif key == "\x15":  # Ctrl+U
                self.typing = ""
            elif key.isprintable():
                self.typing += key
        self.renderer.typing = self.typing


class PausingApprover:
    """An approver whose question is asked with normal line input (the type-ahead pauses)."""

    def __init__(self, inner: Any, typeahead: TypeAhead):
        self.inner, self.typeahead = inner, typeahead

    def approve(self, *args: Any, **kwargs: Any) -> bool:
        with self.typeahead.paused():
            return self.inner.approve(*args, **kwargs)


class SlashCompleter(Completer):
    def get_completions(self, document, complete_event):
        text = document.text_before_cursor
        if text.startswith("/") and " " not in text:
            for name in slash.COMMANDS:
                if name.startswith(text):
                    yield Completion(name, start_position=-len(text), display_meta=slash.COMMANDS[name].help)


def key_bindings() -> KeyBindings:
    """Enter sends; Esc+Enter or a trailing backslash starts a new line; Ctrl+C clears, or exits when empty."""
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

    @kb.add("c-c")
    def _interrupt(event) -> None:
        if event.current_buffer.text:
            event.current_buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt())

    return kb


def tokens_label(n: int) -> str:
    """12345 -> 12.3k; a power-of-two window such as 16384 -> 16k."""
    if n < 1000:
        return str(n)
    if n % 1024 == 0:
        return f"{n // 1024}k"
    return f"{n / 1000:.1f}k"


@dataclass
class Repl:
    agent: Agent
    history: list[Message]
    settings: Settings
    renderer: TerminalRenderer
    # Set by /rewind: the text put back into the next prompt.
    prefill: str = ""
    context_used: int = 0
    turns: list[Any] = field(default_factory=list)  # per-turn token records (TurnTokens events)
    services: dict[str, Any] = field(default_factory=dict)  # session and checkpoint objects, when present
    trap: Trap | None = None  # turns stopping signals into the turn's cancel token (None: signals as Python has them)

    def __post_init__(self) -> None:
        self.typeahead = TypeAhead(self.renderer)
        self.agent.steer = self.typeahead.take
        if self.agent.approver is not None:
            self.agent.approver = PausingApprover(self.agent.approver, self.typeahead)
        self.agent.listeners.append(self.observe)
        from loopagent.context import messages_tokens

        self.context_used = messages_tokens(self.history)

    def observe(self, event: Event) -> None:
        """Keeps what the toolbar and /tokens show."""
        name = type(event).__name__
        if isinstance(event, AssistantDone) and event.message.usage:
            self.context_used = event.message.usage.total
        elif name == "TurnTokens":
            self.turns.append(event)
        elif name == "Compacted":
            self.context_used = event.tokens_after

    def toolbar(self) -> str:
        mode = getattr(self.agent.policy, "mode", self.settings.approval)
        return (f" {self.settings.model} · approval {mode} · "
                f"context {tokens_label(self.context_used)}/{tokens_label(self.settings.ctx_size)} ")

    def run(self) -> int:
        """Read and run until /exit, Ctrl+D (0) or Ctrl+C at an empty prompt (130)."""
        path = loop_home() / "history"
        path.parent.mkdir(parents=True, exist_ok=True)
        prompt: PromptSession[str] = PromptSession(
            history=FileHistory(str(path)), completer=SlashCompleter(), key_bindings=key_bindings(),
            bottom_toolbar=self.toolbar, complete_while_typing=True,
        )
        self.renderer.say("loop: type a task; /help lists commands; Esc+Enter for a new line; Ctrl+D exits.",
                          "dim")
        try:
            return self.loop(prompt)
        except Stopped as exc:  # SIGTERM or SIGHUP at the prompt
            return 128 + exc.signum

    def loop(self, prompt: PromptSession[str]) -> int:
        while True:
            self.renderer.close()
            default, self.prefill = self.prefill, ""
            try:
                text = prompt.prompt("> ", default=default)
            except KeyboardInterrupt:
                return 130
            except EOFError:
                return 0
            text = text.strip()
            if text.startswith("/"):
                code = slash.dispatch(self, text, prompt)
                if code is not None:
                    return code
            elif text:
                self.turn(text)
                if self.agent.health():  # the session cannot be written: said once (stderr); the files stay
                    return 1
                stopping = self.trap.stopping() if self.trap else None
                if stopping:  # SIGTERM or SIGHUP during the turn: the turn is over, and so is the REPL
                    return 128 + stopping

    def turn(self, text: str) -> RunEnd | None:
        """One task from the prompt; queued messages left at the end become the next task."""
        end = None
        while text:
            self.agent.add(self.history, UserMessage(text))
            self.typeahead.start()
            try:
                with self.trap.turn() if self.trap else nullcontext(Cancel()) as cancel:
                    end = self.agent.run(self.history, text, cancel)
            finally:
                self.typeahead.stop()
                self.renderer.close()
            self.prefill = self.typeahead.typing
            self.typeahead.typing = ""
            if end.status == "aborted":  # what was typed during a cancelled turn goes back to the prompt
                with self.typeahead.lock:
                    queued, self.typeahead.queue = self.typeahead.queue, []
                self.renderer.set_queued([])
                self.prefill = "\n".join([*queued, self.prefill]).strip()
                return end
            text = "\n".join(self.typeahead.take())
        return end

    def ask(self, prompt: PromptSession[str], question: str) -> str:
        """A one-line answer inside a slash command; Ctrl+C or Ctrl+D answer with nothing."""
        try:
            return prompt.prompt(question, default="").strip()
        except (KeyboardInterrupt, EOFError):
            return ""

