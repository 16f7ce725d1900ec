"""The completion check: after a final answer, the user's command (--check) decides whether the task
is done. "The model stopped" and "the task is done" are different facts; this is the second.

The command runs exactly like the shell tool (the same code: the run's executor, so sandboxed, the
scrubbed environment, the process tree killed at its timeout or when the token is set), but the
model neither chooses nor skips it: only its output's tail comes back to the model when it fails.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from loopagent.cancel import Cancel
from loopagent.errors import ToolError
from loopagent.events import CheckRan
from loopagent.tools.base import ToolContext
from loopagent.tools.shell import Shell, ShellParams

TAIL_CHARS = 4_000  # of the output sent back and shown: the end, where failures and summaries are


@dataclass
class Check:
    """The configured check command, run in the workspace of `tools` (its executor, env and redactor)."""

    command: str
    tools: ToolContext
    timeout: float = 600.0

    def __call__(self, cancel: Cancel, attempt: int = 1) -> CheckRan:
        """Run the command once; never raises (a command that cannot start is a failed check)."""
        ctx = replace(self.tools, cancel=cancel)
        # model_construct: the check's timeout is the user's setting, not bound by the tool's 3600 s cap
        args = ShellParams.model_construct(command=self.command, timeout=self.timeout)
        begun = time.monotonic()
        try:
            result = Shell().run(args, ctx)
        except ToolError as exc:
            return CheckRan(self.command, False, None, attempt, ctx.redact(str(exc)), time.monotonic() - begun)
        details = result.details
        exit_code = details.exit_code if details is not None else None
        text = result.content
        if exit_code is not None:  # drop the "exit code N" line: the event carries the number
            text = text.partition("\n")[2]
        return CheckRan(self.command, not result.is_error, exit_code, attempt, tail(ctx.redact(text)),
                        time.monotonic() - begun, timed_out=details is not None and details.outcome == "timeout")


def tail(text: str, limit: int = TAIL_CHARS) -> str:
    """The last `limit` characters of `text`, from a line start, marked when cut."""
    text = text.rstrip("\n")
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    start = cut.find("\n") + 1
    cut = cut[start:] if 0 < start < len(cut) else cut
    return f"[... {len(text) - len(cut)} characters before this are not shown]\n{cut}"


def feedback(ran: CheckRan) -> str:
    """What the model is told about a failed check: what failed and how, then the output's tail."""
    how = f"timed out after {ran.seconds:.0f} s" if ran.timed_out else (
        f"failed with exit {ran.exit_code}" if ran.exit_code is not None else "could not run")
    return (f"The check `{ran.command}` {how}: {ran.output}\n\n"
            "The task is not done until this check passes: fix the cause, then give your final answer again.")
