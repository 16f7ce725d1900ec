"""Slash commands for sessions as a tree: /fork (branch the conversation) and /export (a transcript)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopagent.cli.slash import command, session_service
from loopagent.render.safe import printable

if TYPE_CHECKING:
    from loopagent.cli.repl import Repl


@command("/fork", "continue in a new session branched from this one (this one is kept)")
def fork(repl: Repl, arg: str, prompt: Any) -> None:
    if (start := session_service(repl, "fork_session")) is None:
        return
    before = repl.services["session_path"]().stem
    start(repl)  # a new file with the same messages, its header naming `before` and the last message
    after = repl.services["session_path"]().stem
    repl.renderer.say(f"forked: now in {after}; {before} is kept (`loop agent --resume {before}` continues it)")


@command("/export", "write this session as a transcript: /export [FILE] (.md or .html)")
def export(repl: Repl, arg: str, prompt: Any) -> None:
    from loopagent.config import loop_home
    from loopagent.errors import SessionError
    from loopagent.export import export as render
    from loopagent.export import format_for, write_whole

    if (current := session_service(repl, "session_path")) is None:
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
