"""The chat-completions wire form: messages, tools and request bodies as OpenAI-compatible servers want them.

The only place (with client/openai.py, which sends it) where typed messages become wire JSON.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from loopagent.messages import Message, SystemMessage, ToolResult, UserMessage

if TYPE_CHECKING:
    from loopagent.tools.spec import ToolSpec


def wire_message(msg: Message) -> dict[str, Any]:
    """One message in the chat-completions wire form."""
    if isinstance(msg, (SystemMessage, UserMessage)):
        return {"role": msg.role, "content": msg.content}
    if isinstance(msg, ToolResult):
        return {"role": "tool", "tool_call_id": msg.call_id, "content": msg.content}
    out: dict[str, Any] = {"role": "assistant", "content": msg.text}
    if msg.tool_calls:
        # content "" rather than null: llama-cpp-python's server answers 500 to null.
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in msg.tool_calls
        ]
    return out


def wire_tool(spec: ToolSpec) -> dict[str, Any]:
    """One tool in the chat-completions wire form; its JSON schema is sent as given."""
    return {"type": "function",
            "function": {"name": spec.name, "description": spec.description, "parameters": dict(spec.parameters)}}


def wire_tools(tools: Sequence[ToolSpec | dict]) -> list[dict[str, Any]]:
    """Tool specs in wire form; a dict is taken to be in wire form already (callers not yet on specs)."""
    return [t if isinstance(t, dict) else wire_tool(t) for t in tools]


def build_request(
    model: str, messages: Sequence[Message], tools: Sequence[ToolSpec | dict], max_tokens: int,
    stream: bool = True, sampling: dict[str, float] | None = None,
) -> dict[str, Any]:
    """The request body as a dict (tests and tools that want to look at it)."""
    return json.loads(WireEncoder().encode(model, messages, tools, max_tokens, stream, sampling))


class WireEncoder:
    """Serialises request bodies so the per-turn cost stays flat however long the history grows.

    Each message is encoded once; the joined messages of the previous request are reused when
    the new request extends them (the usual case: the loop only appends).
    """

    def __init__(self) -> None:
        # id(message) -> (message, its JSON); holding the message keeps the id from being reused.
        self._fragments: dict[int, tuple[Message, str]] = {}
        self._last: list[Message] = []
        self._last_joined = ""

    to_wire = staticmethod(wire_message)  # another wire form (Ollama's) swaps this and the envelope

    def fragment(self, msg: Message) -> str:
        hit = self._fragments.get(id(msg))
        if hit is None or hit[0] is not msg:
            hit = (msg, json.dumps(self.to_wire(msg), ensure_ascii=False))
            self._fragments[id(msg)] = hit
        return hit[1]

    def encode(self, model: str, messages: Sequence[Message], tools: Sequence[ToolSpec | dict],
               max_tokens: int, stream: bool = True, sampling: dict[str, float] | None = None,
               schema: dict[str, Any] | None = None) -> str:
        envelope = _envelope(model, tools, max_tokens, stream, sampling)
        if schema is not None:  # --output-schema's second request: the server shapes the reply (a grammar)
            envelope = envelope[:-1] + ', "response_format": ' + json.dumps(
                {"type": "json_schema", "json_schema": schema}, ensure_ascii=False) + "}"
        return envelope[:-1] + ', "messages": [' + self.joined(messages) + "]}"

    def joined(self, messages: Sequence[Message]) -> str:
        """The messages' JSON fragments joined by commas, reusing the previous request's join."""
        last, n = self._last, len(self._last)
        # Identity check at C speed; any replaced message (a stub, a compaction) re-joins from scratch.
        if 0 < n <= len(messages) and all(map(operator.is_, last, messages[:n])):
            new = [self.fragment(m) for m in messages[n:]]
            joined = ",".join([self._last_joined, *new]) if new else self._last_joined
        else:
            joined = ",".join(self.fragment(m) for m in messages)
        self._last, self._last_joined = list(messages), joined
        return joined


def _envelope(model: str, tools: Sequence[ToolSpec | dict], max_tokens: int, stream: bool = True,
              sampling: dict[str, float] | None = None) -> str:
    body: dict[str, Any] = {"model": model, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    # Always bounded: a llama.cpp server without it may generate for minutes.
    body["max_tokens"] = max_tokens
    body.update(sampling or {})  # temperature, top_p: only when configured
    if tools:
        body["tools"] = wire_tools(tools)
        body["tool_choice"] = "auto"
    return json.dumps(body, ensure_ascii=False)
