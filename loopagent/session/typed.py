"""The person's own words in a REPL message: a stored user message also holds what loop added to
it (the notes of `!` commands run before it, the files `@path` attached after it), and a listing,
a session's name or /rewind's prefill must show only what was typed."""

from __future__ import annotations

COMMAND_HEAD = "[the user ran a command in the workspace]\n"  # cli/bang.py: a note begins so ...
COMMAND_END = "\n[end of the command's output]"  # ... and ends so, the typed text two newlines on
ATTACHED = "\n\n[attached @"  # cli/mentions.py: each attachment follows the typed text so


def typed(content: str) -> str:
    """`content` without the leading command notes and the trailing attachments."""
    body = content
    while body.startswith(COMMAND_HEAD):
        end = body.find(COMMAND_END)
        if end == -1:  # a note without its end (an older session): no telling where the text starts
            return content
        body = body[end + len(COMMAND_END):].removeprefix("\n\n")
    cut = body.find(ATTACHED)
    return body if cut == -1 else body[:cut]
