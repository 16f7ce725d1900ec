"""`!cmd` at the REPL prompt: the person runs a command themselves, and the model hears of it.

The person typed it, so the policy is not asked; it still runs as the shell tool runs a command
(tools/shell.py): the same executor (inside the sandbox unless `--sandbox off`), the scrubbed
environment, the workspace as its directory, the shell timeout, Ctrl+C to stop it, and every
process it started killed when it ends. Its output is shown as it comes; the command and its
clipped output wait to go with the next message, as context the person gave (never sent alone).
"""

from __future__ import annotations

from typing import Any

from loopagent.clip import clip
from loopagent.tools.base import ToolContext
from loopagent.tools.shell import Output, execute

CONTEXT_HEAD, CONTEXT_TAIL = 4_000, 8_000  # of the output, characters the model is given


class Shown(Output):
    """The shell tool's head-and-tail output, also written to the screen line by line as it arrives."""

    def __init__(self, say: Any) -> None:
        super().__init__()
        self.say, self.partial = say, b""

    def add(self, chunk: bytes) -> None:
        super().add(chunk)
        *done, self.partial = (self.partial + chunk).split(b"\n")
        for line in done:
            self.say(line.decode("utf-8", errors="replace"))

    def flush(self) -> None:
        if self.partial:
            self.say(self.partial.decode("utf-8", errors="replace"))
            self.partial = b""


def run_command(command: str, ctx: ToolContext, say: Any) -> tuple[str, str]:
    """Run `command` as the shell tool would; (outcome, output) with outcome 'exit code N', 'timed out
    after N s' or 'cancelled'. Raises OSError when bash cannot start."""
    output = Shown(lambda line: say(ctx.redact(line)))
    outcome, returncode = execute(command, ctx, ctx.shell_timeout, output)
    output.flush()
    said = {"timeout": f"timed out after {ctx.shell_timeout:g} s", "cancelled": "cancelled"}
    return said.get(outcome, f"exit code {returncode}"), ctx.redact(output.text())


def context_note(command: str, outcome: str, output: str) -> str:
    """What the model is told with the next message."""
    shown = clip(output, CONTEXT_HEAD, CONTEXT_TAIL)
    return f"[the user ran a command in the workspace]\n$ {command}\n{outcome}\n{shown}"


def bang(repl: Any, command: str) -> None:
    """Run what followed `!`, show its output, keep the note for the next message."""
    from contextlib import nullcontext
    from dataclasses import replace

    from loopagent.cancel import Cancel

    command = command.strip()
    if not command:
        repl.renderer.say("usage: !COMMAND runs COMMAND in the workspace; its output goes with your next message",
                          "yellow")
        return
    with repl.trap.turn() if repl.trap else nullcontext(Cancel()) as cancel:
        ctx = replace(repl.agent.tools, cancel=cancel)
        try:
            outcome, output = run_command(command, ctx, repl.renderer.say)
        except OSError as exc:
            repl.renderer.say(f"error: cannot start bash: {exc.strerror}", "red")
            return
    repl.renderer.close()
    repl.context_notes.append(context_note(command, outcome, output))
    repl.renderer.say(f"{outcome}; the command and its output go with your next message", "dim")
