"""Load a session file back into typed messages, repairing what a crash can leave behind.

Two repairs, each reported: a torn last line (the process died mid-write) is dropped, and
tool calls of the last assistant message that have no result get an error result. Anything
else that does not parse is corruption: refused with the file and line, never guessed at.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from loopagent.events import Compacted
from loopagent.messages import AssistantMessage, Message, ToolCall, ToolResult, Usage, from_record
from loopagent.session.catalog import SessionError, parent_of
from loopagent.session.writer import SCHEMA

UNFINISHED = (
    "error: the session ended before this call finished, so its outcome is unknown. "
    "Check the workspace (files, running processes) before repeating it."
)


@dataclass(frozen=True)
class Repair:
    text: str
    dropped: str = ""  # the bytes of a dropped line, kept in the repair record


@dataclass
class Loaded:
    path: Path
    header: dict
    history: list[Message] = field(default_factory=list)
    repairs: list[Repair] = field(default_factory=list)
    missing: list[ToolResult] = field(default_factory=list)  # results to append for unanswered calls
    compacted: list[Compacted] = field(default_factory=list)
    valid_size: int = 0  # bytes of the file that hold complete lines
    # The records that carry no message (end, repair, compacted, check, hook...), each with the number
    # of messages before it: what a transcript shows between the messages (loopagent/export/).
    records: list[tuple[int, dict]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.path.stem

    @property
    def parent(self) -> dict | None:
        """The session and message this one was forked from (None: not a fork)."""
        return parent_of(self.header)


def load(path: Path) -> Loaded:
    """Read and check a session file; raises SessionError naming the file and line when it is corrupt."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SessionError(f"cannot read session file {path}: {exc.strerror or exc}") from None
    loaded = Loaded(path, {})
    lines = numbered_lines(data)
    last = len(lines) - 1
    owners: list[int] = []  # the line number of each message, for messages about corruption
    for i, (number, end, raw) in enumerate(lines):
        try:
            record = json.loads(raw)
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            if i < last:
                raise corrupt(path, number, f"not valid JSON ({exc})") from None
            loaded.repairs.append(Repair(f"dropped an incomplete last line ({len(raw)} bytes) at line {number}",
                                         raw.decode("utf-8", errors="replace")))
            break
        had_header = bool(loaded.header)
        take(loaded, record, path, number)
        if record.get("type") == "message":
            owners.append(number)
        elif had_header:
            loaded.records.append((len(loaded.history), record))
        loaded.valid_size = end
    if not loaded.header:
        raise SessionError(f"{path} has no session header; it is not a loop session file")
    check_calls(loaded, owners)
    return loaded


def numbered_lines(data: bytes) -> list[tuple[int, int, bytes]]:
    """(line number, offset of its end including the newline, text) of every non-blank line."""
    out, start, number = [], 0, 0
    while start < len(data):
        nl = data.find(b"\n", start)
        end = len(data) if nl < 0 else nl + 1
        number += 1
        raw = data[start:end].strip()
        if raw:
            out.append((number, end, raw))
        start = end
    return out


def corrupt(path: Path, number: int, why: str) -> SessionError:
    return SessionError(f"corrupt session file {path} line {number}: {why}; not resuming (nothing was changed)")


def take(loaded: Loaded, record: dict, path: Path, number: int) -> None:
    """Apply one parsed record to `loaded`."""
    kind = record.get("type")
    if not loaded.header:
        if kind != "header":
            raise corrupt(path, number, "the first line is not a session header")
        if not isinstance(record.get("schema"), int) or record["schema"] > SCHEMA:
            raise SessionError(f"{path} uses session schema {record.get('schema')!r}; this loop reads up to "
                               f"{SCHEMA}: upgrade loop to resume it")
        loaded.header = record
        return
    if kind == "message":
        if record.get("index") != len(loaded.history):
            raise corrupt(path, number, f"message index {record.get('index')!r}, expected "
                                        f"{len(loaded.history)} (lines are missing or out of order)")
        try:
            message = from_record(record)
        except (KeyError, TypeError, ValueError) as exc:
            raise corrupt(path, number, f"malformed message ({type(exc).__name__}: {exc})") from None
        if (wrong := mistyped(message)) is not None:
            raise corrupt(path, number, f"malformed message ({wrong} is not of its type)")
        loaded.history.append(message)
    elif kind == "compacted":
        try:
            usage = Usage(**record.get("usage") or {})
            loaded.compacted.append(Compacted(
                summary=record["summary"], upto=record["upto"], tokens_before=record["tokens_before"],
                tokens_after=record["tokens_after"], usage=usage, focus=record.get("focus", ""),
            ))
        except (KeyError, TypeError) as exc:
            raise corrupt(path, number, f"malformed compaction record ({exc})") from None
    # header (again), repair, end and unknown record types carry no messages.


# The text fields of each message, which `from_record` takes from an edited file as they are.
TEXTS = {"system": ("content",), "user": ("content",), "assistant": ("text", "thinking"),
         "tool": ("call_id", "name", "content", "display")}


def mistyped(message: Message) -> str | None:
    """The first field of a message read back whose text is not a string or whose count is not a number
    (a dict where a text belongs would fail far from here, in a reader); None when all are as typed."""
    wrong = next((name for name in TEXTS[message.role] if not isinstance(getattr(message, name), str)), None)
    if wrong is not None or not isinstance(message, AssistantMessage):
        return wrong
    for call in message.tool_calls:
        if not (isinstance(call.id, str) and isinstance(call.name, str) and isinstance(call.arguments, str)):
            return "tool_calls"
    usage = message.usage
    if usage is not None and not all(isinstance(n, int | float) and not isinstance(n, bool)
                                     for n in (usage.prompt_tokens, usage.completion_tokens)):
        return "usage"
    return None


def check_calls(loaded: Loaded, owners: list[int]) -> None:
    """Every tool call needs a result: repair the last assistant message's, refuse earlier gaps."""
    history = loaded.history
    replies = [i for i, m in enumerate(history) if isinstance(m, AssistantMessage)]
    for k, i in enumerate(replies):
        reply = history[i]
        assert isinstance(reply, AssistantMessage)
        later = replies[k + 1] if k + 1 < len(replies) else len(history)
        answered = {m.call_id for m in history[i + 1:later] if isinstance(m, ToolResult)}
        unanswered = [c for c in reply.tool_calls if c.id not in answered]
        if unanswered and later < len(history):
            raise corrupt(loaded.path, owners[i], f"tool call {unanswered[0].id} has no result before the "
                                                  "next model reply")
        for call in unanswered:
            loaded.missing.append(unfinished(call))
            loaded.repairs.append(Repair(f"tool call {call.id} ({call.name}) has no result: the session ended "
                                         "before it finished; added an error result"))


def unfinished(call: ToolCall) -> ToolResult:
    return ToolResult.error(UNFINISHED).answering(call)
