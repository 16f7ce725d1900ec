"""Assemble one assistant turn from OpenAI-style streaming chunks. Pure: values in, values out."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from loopagent.client import IncompleteTurn, ModelError
from loopagent.events import Event, TextDelta, ThinkingDelta
from loopagent.messages import AssistantMessage, ToolCall, Usage


@dataclass
class _Slot:
    index: int | None
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class TurnAssembler:
    """Feed parsed chunk objects in order; `finish()` returns the turn or raises."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.slots: list[_Slot] = []
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    def feed(self, chunk: dict[str, Any]) -> list[Event]:
        """Merge one chunk; returns the deltas a listener should see."""
        if chunk.get("error"):
            err = chunk["error"]
            msg = err.get("message", str(err)) if isinstance(err, dict) else str(err)
            raise ModelError(f"the server reported an error in the stream: {msg}")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
        events: list[Event] = []
        for choice in chunk.get("choices") or []:
            # Non-streaming servers put the whole reply in "message".
            delta = choice.get("delta") or choice.get("message") or {}
            content = delta.get("content")
            if content:
                self.text.append(content)
                events.append(TextDelta(content))
            # llama.cpp and vLLM use reasoning_content; OpenRouter and Ollama use reasoning.
            for key in ("reasoning_content", "reasoning"):
                thought = delta.get(key)
                if isinstance(thought, str) and thought:
                    self.thinking.append(thought)
                    events.append(ThinkingDelta(thought))
            for part in delta.get("tool_calls") or []:
                self._merge_call(part)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return events

    def _merge_call(self, part: dict[str, Any]) -> None:
        index = part.get("index")
        call_id = part.get("id") or ""
        fn = part.get("function") or {}
        slot = self._slot_for(index, call_id)
        if call_id and not slot.id:
            slot.id = call_id
        # Some servers repeat the full name in every fragment: set it once, never append.
        if fn.get("name") and not slot.name:
            slot.name = fn["name"]
        args = fn.get("arguments")
        if isinstance(args, dict):  # a few servers send an object instead of JSON text
            args = json.dumps(args)
        if args:
            slot.arguments.append(args)

    def _slot_for(self, index: int | None, call_id: str) -> _Slot:
        if index is not None:
            for slot in reversed(self.slots):
                # Same index but a different id: a server that numbers every call 0.
                if slot.index == index and not (call_id and slot.id and slot.id != call_id):
                    return slot
        elif self.slots:
            last = self.slots[-1]
            if not call_id or call_id == last.id:
                return last
            for slot in self.slots:
                if slot.id == call_id:
                    return slot
        slot = _Slot(index=index)
        self.slots.append(slot)
        return slot

    def finish(self) -> AssistantMessage:
        """The complete turn; raises IncompleteTurn when the stream did not finish properly."""
        if self.finish_reason is None:
            raise IncompleteTurn("the model stream ended without a finish reason (cut short or empty)")
        if self.finish_reason == "length":
            raise IncompleteTurn(
                "the model stopped at its output limit (finish_reason \"length\"); "
                "raise max_tokens or shorten the request"
            )
        calls = tuple(
            ToolCall(id=s.id or f"call_{uuid.uuid4().hex[:24]}", name=s.name, arguments="".join(s.arguments))
            for s in self.slots
        )
        # Some servers say "stop" although tool calls are present: the calls decide.
        return AssistantMessage(
            text="".join(self.text),
            thinking="".join(self.thinking),
            tool_calls=calls,
            stop_reason="tool_calls" if calls else "stop",
            usage=self.usage,
        )
