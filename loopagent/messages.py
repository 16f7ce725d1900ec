"""Typed conversation messages.

Core code works with these values only; wire JSON is produced at the edge
(`client/openai.py`) and the session file uses `to_record`/`from_record`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from loopagent.details import Details, details_from, details_record

StopReason = Literal["stop", "tool_calls", "length", "incomplete", "error", "interrupted"]


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ToolCall:
    """A call as the model produced it; `arguments` is the raw JSON text, untrusted."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class SystemMessage:
    content: str
    role: Literal["system"] = "system"


@dataclass(frozen=True)
class UserMessage:
    content: str
    role: Literal["user"] = "user"


@dataclass(frozen=True)
class AssistantMessage:
    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: StopReason = "stop"
    usage: Usage | None = None
    role: Literal["assistant"] = "assistant"
    recovered: bool = False  # its tool calls were written in its text and recovered (client/textcalls.py)


@dataclass(frozen=True)
class ToolResult:
    """What one call produced. `content` is for the model, `display` for a person, `details` (typed:
    outcome, exit code, line counts, diff) for the renderer, so that nothing parses `content`."""

    call_id: str
    name: str
    content: str
    is_error: bool = False
    display: str = ""
    role: Literal["tool"] = "tool"
    # Not part of equality: a result read back from a session file is the same result without them.
    details: Details | None = field(default=None, compare=False)

    @classmethod
    def ok(cls, content: str, display: str = "", details: Details | None = None) -> ToolResult:
        return cls(call_id="", name="", content=content, display=display, details=details)

    @classmethod
    def error(cls, content: str, details: Details | None = None) -> ToolResult:
        return cls(call_id="", name="", content=content, is_error=True, details=details)

    def answering(self, call: ToolCall) -> ToolResult:
        """This result bound to the call it answers."""
        return replace(self, call_id=call.id, name=call.name)


Message = SystemMessage | UserMessage | AssistantMessage | ToolResult


def to_record(msg: Message) -> dict[str, Any]:
    """A lossless JSON-able dict of a message (session files)."""
    if isinstance(msg, AssistantMessage):
        rec: dict[str, Any] = {"role": "assistant", "text": msg.text}
        if msg.thinking:
            rec["thinking"] = msg.thinking
        rec["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in msg.tool_calls
        ]
        rec["stop_reason"] = msg.stop_reason
        if msg.recovered:
            rec["recovered"] = True
        if msg.usage is not None:
            rec["usage"] = {
                "prompt_tokens": msg.usage.prompt_tokens,
                "completion_tokens": msg.usage.completion_tokens,
            }
        return rec
    if isinstance(msg, ToolResult):
        rec = {"role": "tool", "call_id": msg.call_id, "name": msg.name, "content": msg.content,
               "is_error": msg.is_error}
        if msg.display:
            rec["display"] = msg.display
        if msg.details is not None:
            rec["details"] = details_record(msg.details)
        return rec
    return {"role": msg.role, "content": msg.content}


def from_record(rec: dict[str, Any]) -> Message:
    """Inverse of `to_record`; raises KeyError/TypeError/ValueError on a malformed record."""
    role = rec["role"]
    if role == "system":
        return SystemMessage(str(rec["content"]))
    if role == "user":
        return UserMessage(str(rec["content"]))
    if role == "assistant":
        usage = rec.get("usage")
        return AssistantMessage(
            text=rec.get("text", ""),
            thinking=rec.get("thinking", ""),
            tool_calls=tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in rec.get("tool_calls", [])),
            stop_reason=rec.get("stop_reason", "stop"),
            usage=Usage(usage["prompt_tokens"], usage["completion_tokens"]) if usage else None,
            recovered=rec.get("recovered") is True,
        )
    if role == "tool":
        return ToolResult(
            call_id=rec["call_id"], name=rec["name"], content=rec["content"],
            is_error=bool(rec.get("is_error", False)), display=rec.get("display", ""),
            details=details_from(rec.get("details")),
        )
    raise ValueError(f"unknown role {role!r}")
