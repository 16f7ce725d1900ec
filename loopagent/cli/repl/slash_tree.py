"""Slash commands for sessions as a tree: /fork (branch the conversation) and /export (a transcript)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopagent.cli.repl.slash import offered
from loopagent.render.safe import printable

if TYPE_CHECKING:
    from loopagent.cli.repl.repl import Repl


def fork(repl: Repl, arg: str, prompt: Any) -> None:
    start, current = offered(repl, repl.services.fork_session), repl.services.session_path
    if start is None or current is None:
        return
    before = current().stem
    start(repl.history)  # a new file with the same messages, its header naming `before` and the last message
    after = current().stem
    repl.renderer.say(f"forked: now in {after}; {before} is kept (`loop agent --resume {before}` continues it)")


def export(repl: Repl, arg: str, prompt: Any) -> None:
    from loopagent.config import loop_home
    from loopagent.errors import SessionError
    from loopagent.export import export as render
    from loopagent.export import format_for, write_whole

    if (current := offered(repl, repl.services.session_path)) is None:
        return
    path: Path = current()
    # Without a name, beside the sessions rather than in the repository: a transcript is not the project's.
    target = Path(arg).expanduser() if arg else loop_home() / "exports" / f"{path.stem}.md"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_whole(target, render(path, format_for(None, target)))
    except (OSError, SessionError) as exc:
        why = exc.strerror.lower() if isinstance(exc, OSError) and exc.strerror else str(exc)
        repl.renderer.say(f"cannot write {printable(str(target))}: {printable(why)}", "red")
        return
    repl.renderer.say(f"wrote {printable(str(target))}")
