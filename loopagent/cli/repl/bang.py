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
from loopagent.session.typed import COMMAND_END, COMMAND_HEAD
from loopagent.tools.base import ToolContext
from loopagent.tools.shell import Output, execute

CONTEXT_HEAD, CONTEXT_TAIL = 4_000, 8_000  # of the output, characters the model is given
LINE_PIECE = 4_096  # bytes: a longer line is shown in pieces, never gathered whole in memory


class Shown(Output):
    """The shell tool's head-and-tail output, also written to the screen line by line as it arrives."""

    def __init__(self, say: Any) -> None:
        super().__init__()
        self.say, self.partial = say, b""

    def add(self, chunk: bytes) -> None:
        super().add(chunk)
        *done, self.partial = (self.partial + chunk).split(b"\n")
        for line in done:  # a progress bar redraws its line after \r: shown as a terminal would show it
            self.say(line.rstrip(b"\r").rsplit(b"\r", 1)[-1].decode("utf-8", errors="replace"))
        while len(self.partial) >= LINE_PIECE:  # output without newlines (a binary, a progress bar) shows
            self.say(self.partial[:LINE_PIECE].decode("utf-8", errors="replace"))  # as it comes, in pieces
            self.partial = self.partial[LINE_PIECE:]

    def flush(self) -> None:
        if self.partial:
            self.say(self.partial.decode("utf-8", errors="replace"))
            self.partial = b""


def run_command(command: str, ctx: ToolContext, say: Any) -> tuple[str, str]:
    """Run `command` as the shell tool would; (outcome, output) with outcome 'exit code N', 'timed out
    after N s' or 'cancelled'. Raises OSError when bash cannot start."""
    output = Shown(lambda line: say(ctx.redact(line)))
    outcome, returncode, tripped = execute(command, ctx, ctx.shell_timeout, output)
    output.flush()
    said = {"timeout": f"timed out after {ctx.shell_timeout:g} s", "cancelled": "cancelled"}
    text = ctx.redact(output.text())
    if tripped:  # the user was warned (ctx.warn); the model hears of it with the command's output
        text += ("" if text.endswith("\n") else "\n") + tripped + "\n"
    return said.get(outcome, f"exit code {returncode}"), text


def context_note(command: str, outcome: str, output: str) -> str:
    """What the model is told with the next message."""
    shown = clip(output, CONTEXT_HEAD, CONTEXT_TAIL)
    return f"{COMMAND_HEAD}$ {command}\n{outcome}\n{shown}{COMMAND_END}"


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
