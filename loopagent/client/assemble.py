"""Assemble one assistant turn from OpenAI-style streaming chunks. Pure: values in, values out."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from loopagent.client import IncompleteTurn, ModelError
from loopagent.events import Event, Notice, TextDelta, ThinkingDelta
from loopagent.messages import AssistantMessage, ToolCall, Usage
from loopagent.thinking import split_thinking


class OutputCut(IncompleteTurn):
    """The reply stopped at max_tokens (finish_reason "length"): nothing of it may run.

    `cut_call` says a tool call was being written; `limit` (set by the client that knows it) is
    the output limit in tokens. `note()` is what the model is told, once, so it can try again.
    """

    def __init__(self, message: str, partial: AssistantMessage | None = None, cut_call: bool = False,
                 limit: int | None = None):
        super().__init__(message, partial)
        self.cut_call, self.limit = cut_call, limit

    def note(self) -> str:
        """The message for the model: what happened, and what to do differently."""
        limit = f" of {self.limit} tokens" if self.limit else ""
        advice = ("a tool call was cut off: write smaller pieces (split a large write_file into several "
                  "edit_file calls or shorter files)" if self.cut_call else
                  "answer more briefly, or continue in smaller steps")
        return f"your reply was cut at the output limit{limit}; nothing ran; {advice}."


class EmptyStream(IncompleteTurn):
    """A 200 event stream that carried no event at all: how some servers refuse what they cannot do."""


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
        # Counts fragments that carry something (text, thinking, a call's piece, the finish): the
        # client's idle deadline watches it, so keep-alives and empty deltas do not keep a turn alive.
        self.progress = 0

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
            if isinstance(content, str) and content:
                self.text.append(content)
                self.progress += 1
                events.append(TextDelta(content))
            # llama.cpp and vLLM use reasoning_content; OpenRouter and Ollama use reasoning.
            for key in ("reasoning_content", "reasoning"):
                thought = delta.get(key)
                if isinstance(thought, str) and thought:
                    self.thinking.append(thought)
                    self.progress += 1
                    events.append(ThinkingDelta(thought))
            for part in delta.get("tool_calls") or []:
                self._merge_call(part)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
                self.progress += 1
        return events

    def _merge_call(self, part: dict[str, Any]) -> None:
        index = part.get("index")
        call_id = part.get("id") or ""
        fn = part.get("function") or {}
        slot = self._slot_for(index, call_id)
        if call_id or fn.get("name") or fn.get("arguments"):
            self.progress += 1
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

    def partial(self) -> AssistantMessage:
        """What arrived so far, as a message that runs nothing (half-streamed calls are dropped)."""
        return AssistantMessage(text="".join(self.text), thinking="".join(self.thinking),
                                stop_reason="incomplete", usage=self.usage)

    def finish(self, complete: bool = False) -> AssistantMessage:
        """The complete turn; raises IncompleteTurn when the stream did not finish properly.

        `complete`: the server said the stream is over (`[DONE]`, or one whole JSON reply), so a
        text answer with a finish reason loop does not know is kept (`unusual_end` says why).
        """
        reason = self.finish_reason
        if reason is None:
            raise IncompleteTurn("the model stream ended without a finish reason (cut short or empty)",
                                 self.partial())
        if reason in CUT_ENDS:
            raise OutputCut(
                f"the model stopped at its output limit (finish_reason \"{reason}\"); "
                "raise max_tokens or shorten the request", replace(self.partial(), stop_reason="length"),
                cut_call=bool(self.slots),
            )
        if reason not in NORMAL_ENDS and not (complete and reason not in STOPPED_ENDS and not self.slots):
            # content_filter with a tool call once ran the tool: a reply the server stopped runs nothing.
            raise IncompleteTurn(abnormal_end(reason, len(self.slots)), self.partial())
        calls = tuple(
            ToolCall(id=s.id or f"call_{uuid.uuid4().hex[:24]}", name=s.name, arguments="".join(s.arguments))
            for s in self.slots
        )
        # Inline <think> blocks are reasoning, not answer: kept as thinking, never sent back as text.
        inline, text = split_thinking("".join(self.text))
        thinking = "".join(self.thinking) + inline
        if not calls and not text.strip():
            only = " (only thinking)" if thinking.strip() else ""
            raise IncompleteTurn(f"the model sent an empty reply{only}: no text and no tool calls",
                                 self.partial())
        # Some servers say "stop" although tool calls are present: the calls decide.
        return AssistantMessage(
            text=text,
            thinking=thinking,
            tool_calls=calls,
            stop_reason="tool_calls" if calls else "stop",
            usage=self.usage,
        )

    def unusual_end(self) -> str:
        """What to tell the user about a kept reply whose finish reason loop does not know, or ""."""
        reason = self.finish_reason
        if reason is None or reason in NORMAL_ENDS:
            return ""
        return (f"the server ended the reply with finish_reason {reason[:60]!r}, which loop does not know; "
                "the stream was complete, so the answer is kept")


def finished(turn: TurnAssembler, emit: Callable[[Event], None]) -> AssistantMessage:
    """The turn of a stream the server said is complete; an unknown finish reason is said, not fatal."""
    reply = turn.finish(complete=True)
    if note := turn.unusual_end():
        emit(Notice("warning", note))
    return reply


EMPTY = "the model sent an empty reply"
# Servers that cannot stream tool calls (llama-cpp-python) also answer empty in text beside tools.
KNOWN_EMPTY = ("this server answers with nothing when tools are offered and the model does not call one "
               "(llama-cpp-python's --chat_format chatml-function-calling allows only a tool call): ask for "
               "something a tool does, start it with the model's own function-calling chat format, or use "
               "llama-server --jinja; `loop doctor` checks a server")
MAYBE_EMPTY = "tools were offered: a chat format that can only call a tool sends nothing else; `loop doctor` checks"


def explain_empty(exc: IncompleteTurn, tools: bool, known: bool) -> IncompleteTurn:
    """`exc`, or for an empty reply to a request with tools the same turn with why and what to do."""
    if type(exc) is not IncompleteTurn or not tools or not str(exc).startswith(EMPTY):
        return exc
    return IncompleteTurn(f"{exc}; {KNOWN_EMPTY if known else MAYBE_EMPTY}", exc.partial)


# The finish reasons of a reply that ended as meant. "function_call" is OpenAI's older name for a call;
# "eos_token", "eos" and "stop_sequence" are how Hugging Face TGI and gateways in front of it say "stop";
# "end_turn", "end" and "tool_use" come through Anthropic-style gateways and Together.
NORMAL_ENDS = {"stop", "tool_calls", "function_call", "eos_token", "eos", "stop_sequence", "end_turn", "end",
               "tool_use"}
# Stopped at the output limit: "max_tokens" is the Anthropic-style name of "length".
CUT_ENDS = {"length", "max_tokens"}
# Ends where the server withheld the reply: never kept, whatever else arrived.
STOPPED_ENDS = {"content_filter", "refusal", "safety", "recitation"}


def abnormal_end(reason: str, calls: int) -> str:
    """The message for a reply the server ended for another reason than finishing it."""
    dropped = f"; its {calls} tool call{'s' if calls != 1 else ''} did not run" if calls else ""
    if reason == "content_filter":
        return f"the server's content filter stopped the reply (finish_reason \"content_filter\"){dropped}"
    return f"the server ended the reply with finish_reason {reason[:60]!r}, not a normal end{dropped}"
