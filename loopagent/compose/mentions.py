"""`@path` in a REPL message: the file's numbered content (or a directory's listing) attached to it.

An attachment is a real `read_file` (or `list_files`) call run through the agent's registry, its
policy and its tool context: the workspace confines the path, read deny rules refuse it, the
size cap and clipping apply, and a file read this way counts as read for the stale-edit check.
A mention that cannot be attached is one line on the screen, and nothing is attached for it.
"""

from __future__ import annotations

import json
import re
import stat
from dataclasses import dataclass
from typing import Any

from loopagent.errors import ToolError
from loopagent.messages import ToolCall, ToolResult

# `@` at the start or after white space (an e-mail address is no mention), then a path up to white space.
# Not the header of an attachment quoted back ("[attached @a.txt, ...]"): that would attach it again.
MENTION = re.compile(r"(?:(?<=\s)|^)(?<!\[attached )@(\S+)")
TRAILING = ",;:!?)]}'\"."  # punctuation that ends a sentence rather than a path


@dataclass(frozen=True)
class Attached:
    """What a message's mentions gave: the text for the model and one line per mention for the screen."""

    blocks: list[str]
    notes: list[str]


def mentioned(text: str) -> list[str]:
    """The paths `text` mentions with `@`, in order, each once."""
    return list(dict.fromkeys(m.group(1) for m in MENTION.finditer(text)))


def attach(agent: Any, text: str) -> Attached:
    """Run each mention of `text` as the file tools would; the blocks to append and the screen's notes."""
    blocks, notes = [], []
    for raw in mentioned(text):
        path = settle(agent, raw)
        result, tool = read(agent, path)
        if result.is_error:
            notes.append(f"@{path}: not attached: {first_line(result.content)}")
            continue
        what = "listing of the directory" if tool == "list_files" else "as read_file shows it"
        blocks.append(f"[attached @{path}, {what}]\n{result.content}")
        notes.append(f"attached @{path}")
    return Attached(blocks, notes)


def settle(agent: Any, raw: str) -> str:
    """`raw`, or `raw` without trailing punctuation when only that names something in the workspace."""
    stripped = raw.rstrip(TRAILING)
    if stripped and stripped != raw and kind(agent, raw) is None and kind(agent, stripped) is not None:
        return stripped
    return raw


def kind(agent: Any, path: str) -> str | None:
    """'dir', 'file' or None (missing, or not inside the workspace) for a mentioned path."""
    ws = agent.tools.workspace
    try:
        st = ws.lstat(ws.resolve(path))
    except (ToolError, OSError):
        return None
    if st is None:
        return None
    return "dir" if stat.S_ISDIR(st.st_mode) else "file"


def read(agent: Any, path: str) -> tuple[ToolResult, str]:
    """The result of read_file (or list_files for a directory) on `path`, decided by the agent's policy."""
    tool = "list_files" if kind(agent, path) == "dir" else "read_file"
    call = ToolCall(f"mention-{tool}", tool, json.dumps({"path": path}))
    prepared = agent.registry.prepare(call)
    if isinstance(prepared, ToolResult):
        return prepared, tool
    decision = agent.policy.decide(tool, prepared.arguments, prepared.read_only)
    if decision.verdict == "deny":
        return ToolResult.error(f"{decision.reason} ({decision.rule})"), tool
    return agent.registry.run(prepared, agent.tools), tool


def first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:200]


def with_attachments(text: str, attached: Attached) -> str:
    """The message the model gets: what was typed, then each attachment."""
    return "\n\n".join([text, *attached.blocks])
