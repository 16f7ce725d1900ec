"""The person's own words in a REPL message: a stored user message also holds what loop added to
it (the context of the session_start hooks and the notes of `!` commands run before it, the files
`@path` attached after it), and a listing, a session's name or /rewind's prefill must show only what
was typed."""

from __future__ import annotations

COMMAND_HEAD = "[the user ran a command in the workspace]\n"  # cli/repl/bang.py: a note begins so ...
COMMAND_END = "\n[end of the command's output]"  # ... and ends so, the typed text two newlines on
ATTACHED = "\n\n[attached @"  # compose/mentions.py: each attachment follows the typed text so
HOOK_HEAD = "[session_start hook]\n"  # loop.py: a hook's context opens the first message so ...
HOOK_END = "\n[end of the session_start hook's context]"  # ... and ends so, the message two newlines on
HEADS = {COMMAND_HEAD: COMMAND_END, HOOK_HEAD: HOOK_END}


def typed(content: str) -> str:
    """`content` without the leading hook contexts and command notes and the trailing attachments."""
    body = content
    while head := next((h for h in HEADS if body.startswith(h)), None):
        end = body.find(HEADS[head])
        if end == -1:  # a note without its end (an older session): no telling where the text starts
            return content
        body = body[end + len(HEADS[head]):].removeprefix("\n\n")
    cut = body.find(ATTACHED)
    return body if cut == -1 else body[:cut]
