"""What the REPL keeps between prompts: all a slash command may use of it. The commands (commands.py,
slash.py, slash_prompt.py, restore.py) take this, never the prompt loop of repl.py, which imports them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loopagent.run.services import Services

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession

    from loopagent.config import Settings
    from loopagent.loop import Agent
    from loopagent.messages import Message
    from loopagent.render.terminal import TerminalRenderer
    from loopagent.run.interrupts import Trap


@dataclass
class ReplState:
    agent: Agent
    history: list[Message]
    settings: Settings
    renderer: TerminalRenderer
    # Set by /rewind: the text put back into the next prompt.
    prefill: str = ""
    context_used: int = 0
    # Per-step token records (TurnTokens events), each task's led by its AgentStart (/tokens separates them).
    turns: list[Any] = field(default_factory=list)
    services: Services = field(default_factory=Services)  # the session file and checkpoints, where the run has them
    trap: Trap | None = None  # turns stopping signals into the turn's cancel token (None: signals as Python has them)
    context_notes: list[str] = field(default_factory=list)  # `!cmd` outputs, sent with the next message

    def ask(self, prompt: PromptSession[str], question: str) -> str:
        """A one-line answer inside a slash command, kept out of the prompt's history; Ctrl+C or Ctrl+D
        answer with nothing."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import InMemoryHistory

        asking: PromptSession[str] = PromptSession(history=InMemoryHistory())
        try:
            return asking.prompt(question, default="").strip()
        except (KeyboardInterrupt, EOFError):
            return ""
