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
    from loopagent.export import export as render
    from loopagent.export import format_for

    if (current := session_service(repl, "session_path")) is None:
        return
    path: Path = current()
    target = Path(arg).expanduser() if arg else Path.cwd() / f"{path.stem}.md"
    target.write_text(render(path, format_for(None, target)), encoding="utf-8")
    repl.renderer.say(f"wrote {printable(str(target))}")
