"""`/check [CMD]`: run the completion check now, outside any turn, and show (and record) its outcome.

Without CMD it runs the configured check (--check, LOOP_CHECK, the user file). It runs exactly as
after an answer (loopagent/check.py: the run's sandbox, env and redactor); Ctrl+C stops it. The
outcome is shown and written to the session; the model is not asked anything.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from loopagent.cancel import Cancel

if TYPE_CHECKING:
    from loopagent.cli.repl.repl import Repl


def run_check(repl: Repl, arg: str, prompt: Any) -> None:
    from loopagent.check import Check

    cmd = arg or repl.settings.check
    if not cmd:
        repl.renderer.say("no check configured: start loop with --check CMD, or type /check CMD", "yellow")
        return
    check = Check(cmd, repl.agent.tools, repl.settings.check_timeout)
    with repl.trap.turn() if repl.trap else nullcontext(Cancel()) as cancel:
        ran = check(cancel, 1)
    repl.agent.emit(ran)  # the renderer shows it, the session file records it
