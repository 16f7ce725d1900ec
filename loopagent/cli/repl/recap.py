"""The few lines the REPL shows when it continues a saved session: which one, its task, when it was
last active, and the last exchanges, each clipped to one line."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from loopagent.messages import AssistantMessage, Message, UserMessage
from loopagent.session.typed import typed

EXCHANGES = 3  # the last exchanges shown
WIDTH = 100  # each shown line is clipped to this many characters

NOTE = "[note from loop] "  # how loop's own notes to the model begin (they are no exchange of the person's)


def clip(text: str, width: int = WIDTH) -> str:
    """The first line of `text`, whitespace collapsed, cut to `width` with an ellipsis."""
    flat = " ".join(text.strip().split("\n", 1)[0].split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def ago(seconds: float) -> str:
    """A rough age: "just now", "5 minutes ago", "3 hours ago", "2 days ago"."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        n = int(seconds // size)
        if n >= 1:
            return f"{n} {unit}{'' if n == 1 else 's'} ago"
    return "just now"


def exchanges(history: list[Message]) -> list[tuple[str, str]]:
    """(what the person asked, how the agent answered) per message the person sent, oldest first."""
    out: list[tuple[str, str]] = []
    for message in history:
        if isinstance(message, UserMessage) and not message.content.startswith(NOTE):
            out.append((typed(message.content), ""))  # the person's words, not loop's notes and attachments
        elif isinstance(message, AssistantMessage) and out:
            if message.text.strip():
                answer = message.text
            else:
                answer = "(called " + ", ".join(c.name for c in message.tool_calls) + ")" if message.tool_calls else ""
            out[-1] = (out[-1][0], answer or out[-1][1])
    return out


def recap(history: list[Message], session_id: str, path: Path | None, now: float | None = None,
          width: int = WIDTH) -> list[str]:
    """The lines shown on resuming: id, last activity, task, then the last exchanges (each cut to `width`)."""
    asked = exchanges(history)
    when = ""
    if path is not None:
        try:
            mtime = path.stat().st_mtime
        except OSError:
            mtime = None
        if mtime is not None:
            stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(mtime))
            when = f" · last active {ago((now or time.time()) - mtime)} ({stamp})"
    lines = [f"resumed session {session_id}{when}"]
    if asked:
        lines.append(f"task: {clip(asked[0][0], width - 6)}")
    shown = asked[-EXCHANGES:]
    if len(asked) > len(shown):
        lines.append(f"  … {len(asked) - len(shown)} earlier")
    for question, answer in shown:
        lines.append(f"  > {clip(question, width - 4)}")
        if answer:
            lines.append(f"    {clip(answer, width - 4)}")
    return lines


def session_of(repl: Any) -> tuple[str, Path | None]:
    """The id and file of the session the REPL writes (("", None) when there is none).

    Asked from the session writer among the agent's listeners (it carries `id` and `path`).
    """
    found = next((x for x in repl.agent.listeners if type(x).__name__ == "SessionWriter"), None)
    path = getattr(found, "path", None)
    return str(getattr(found, "id", "") or ""), Path(path) if path else None


def resume_command(session_id: str, workspace: Path | None = None) -> str:
    """The command that continues a session: `loop agent --resume ID`, with `-C DIR` unless DIR is the
    current directory (sessions are looked up per workspace)."""
    import shlex

    where = ""
    if workspace is not None:
        try:
            here = Path.cwd().resolve() == Path(workspace).resolve()
        except OSError:  # the current directory is gone
            here = False
        where = "" if here else f" -C {shlex.quote(str(workspace))}"
    return f"loop agent{where} --resume {shlex.quote(session_id)}"
