"""The native Ollama adapter: POST /api/chat, streamed as JSON lines, with `options.num_ctx` set.

It exists for one reason: Ollama's OpenAI-compatible endpoint cannot set the context size, and
Ollama then cuts the prompt to its default window without telling anyone (ollama #10980). The
behaviour (retries before the first byte, the idle deadline, the hang-up on cancel, the fallback
without streaming, recovered text calls, redacted messages) is OpenAIClient's; what differs is
the wire form: the request body, and replies that are Ollama objects, translated here into the
chat-completions chunks the one TurnAssembler reads.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from loopagent.client import Cancelled, IncompleteTurn, ModelError, ServerUnavailable
from loopagent.client.assemble import EmptyStream, TurnAssembler
from loopagent.client.ndjson import LineDecoder
from loopagent.client.openai import OpenAIClient
from loopagent.client.watch import Idle
from loopagent.client.wire import WireEncoder, wire_tools
from loopagent.events import Event
from loopagent.messages import AssistantMessage, Message, SystemMessage, ToolResult, UserMessage
from loopagent.secrets import public_url

if TYPE_CHECKING:
    from loopagent.cancel import Cancel
    from loopagent.tools.spec import ToolSpec

__all__ = ["OllamaChunks", "OllamaClient", "OllamaEncoder", "ollama_endpoint", "ollama_message"]


def ollama_message(msg: Message) -> dict[str, Any]:
    """One message in /api/chat's form: call arguments as objects, results named by their tool."""
    if isinstance(msg, (SystemMessage, UserMessage)):
        return {"role": msg.role, "content": msg.content}
    if isinstance(msg, ToolResult):
        return {"role": "tool", "content": msg.content, "tool_name": msg.name}
    out: dict[str, Any] = {"role": "assistant", "content": msg.text}
    if msg.tool_calls:
        out["tool_calls"] = [{"function": {"name": c.name, "arguments": _arguments(c.arguments)}}
                             for c in msg.tool_calls]
    return out


def _arguments(raw: str) -> dict[str, Any]:
    # Ollama wants an object (a string is HTTP 400). Arguments that were not a JSON object got an
    # error result the model reads; the call itself goes back with none.
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class OllamaEncoder(WireEncoder):
    """Request bodies for /api/chat, with the same incremental join of messages as the chat-completions form."""

    to_wire = staticmethod(ollama_message)

    def __init__(self, num_ctx: int | None = None) -> None:
        super().__init__()
        self.num_ctx = num_ctx

    def encode(self, model: str, messages: Sequence[Message], tools: Sequence[ToolSpec | dict],
               max_tokens: int, stream: bool = True, sampling: dict[str, float] | None = None,
               schema: dict[str, Any] | None = None) -> str:
        # num_ctx: without it Ollama silently cuts the prompt to its default window.
        # num_predict: always bounded, as max_tokens is on the other wire form.
        options: dict[str, Any] = {"num_ctx": self.num_ctx} if self.num_ctx else {}
        options["num_predict"] = max_tokens
        options.update(sampling or {})
        body: dict[str, Any] = {"model": model, "stream": stream, "options": options}
        if tools:
            body["tools"] = wire_tools(tools)  # Ollama takes the chat-completions function form as is
        if schema is not None:  # --output-schema: Ollama's own field takes the bare JSON Schema
            body["format"] = schema["schema"]
        envelope = json.dumps(body, ensure_ascii=False)
        return envelope[:-1] + ', "messages": [' + self.joined(messages) + "]}"


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class OllamaChunks:
    """Turns /api/chat reply objects into chat-completions chunks, one at a time. Pure.

    Ollama sends each tool call whole, without an index and often without an id: every call gets
    its own index, and an id unless it brought a fresh one. The final object (`done: true`) holds
    the finish (`done_reason`) and the token counts.
    """

    def __init__(self) -> None:
        self.ids: set[str] = set()

    def chunk(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The chunk for one reply object (an `error` object stays one, which the assembler raises)."""
        if obj.get("error"):
            return {"error": obj["error"]}
        msg = obj.get("message")
        msg = msg if isinstance(msg, dict) else {}
        delta: dict[str, Any] = {}
        if isinstance(msg.get("content"), str):
            delta["content"] = msg["content"]
        if isinstance(msg.get("thinking"), str):
            delta["reasoning"] = msg["thinking"]
        calls = msg.get("tool_calls")
        if isinstance(calls, list):
            delta["tool_calls"] = [self._call(c) for c in calls if isinstance(c, dict)]
        choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None}
        out: dict[str, Any] = {"choices": [choice]}
        if obj.get("done") is True:
            reason = obj.get("done_reason")
            # "stop" also ends a reply with tool calls: the calls decide (TurnAssembler.finish).
            choice["finish_reason"] = reason[:60] if isinstance(reason, str) and reason else "stop"
            if "prompt_eval_count" in obj or "eval_count" in obj:  # a fully cached prompt may omit the first
                out["usage"] = {"prompt_tokens": _count(obj.get("prompt_eval_count")),
                                "completion_tokens": _count(obj.get("eval_count"))}
        return out

    def _call(self, call: dict[str, Any]) -> dict[str, Any]:
        fn = call.get("function")
        fn = fn if isinstance(fn, dict) else {}
        name = fn.get("name") if isinstance(fn.get("name"), str) else ""
        args = fn.get("arguments")
        if args is None:
            args = {}
        elif not isinstance(args, (dict, str)):
            args = json.dumps(args)  # a list or a number: the tool's schema check will say what is wrong
        given = call.get("id")
        cid = given if isinstance(given, str) and given and given not in self.ids else f"call_{uuid.uuid4().hex[:24]}"
        self.ids.add(cid)
        return {"index": len(self.ids) - 1, "id": cid, "function": {"name": name, "arguments": args}}


def ollama_endpoint(base_url: str) -> str:
    """/api/chat under Ollama's root URL; a URL of its OpenAI endpoint (…/v1) is taken back to the root."""
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return base_url.rstrip("/") + "/api/chat"  # httpx will say what is wrong with it
    path = parts.path.rstrip("/")
    path = path[:-3] if path.endswith("/v1") else path
    return urlunsplit(parts._replace(path=path + "/api/chat", fragment=""))


@dataclass
class OllamaClient(OpenAIClient):
    """An Ollama server through /api/chat; the interface and behaviour of OpenAIClient."""

    provider: str = "ollama"
    ctx_size: int | None = None  # sent as options.num_ctx: the context size in force

    def __post_init__(self) -> None:
        super().__post_init__()
        self.url = ollama_endpoint(self.base_url)
        self.shown = public_url(self.url) or "(an invalid URL)"
        self._encoder = OllamaEncoder(self.ctx_size)

    def _connect(self) -> httpx.Client:
        self._headers["Accept"] = "application/x-ndjson"
        return super()._connect()

    def send(self, messages: Sequence[Message], tools: Sequence[ToolSpec | dict], emit: Callable[[Event], None],
             cancel: Cancel, stream: bool = True, schema: dict[str, Any] | None = None) -> AssistantMessage:
        """One request and its reply; an error says what to do about it when Ollama's answer tells."""
        try:
            return super().send(messages, tools, emit, cancel, stream, schema)
        except ModelError as exc:
            if type(exc) not in (ModelError, ServerUnavailable) or not (hint := self._hint(str(exc))):
                raise  # StreamToolsRefused and the like: the fallback needs them as they are
            raise type(exc)(f"{exc}; {hint}") from exc

    def _hint(self, message: str) -> str:
        said = message.lower()
        if message.startswith("HTTP 404") and "model" in said and "not found" in said:
            return f"to get it: ollama pull {self.model}"
        if message.startswith("HTTP 404"):
            return (f"is {public_url(self.base_url)} an Ollama server? --provider ollama wants its root URL "
                    "(like http://127.0.0.1:11434)")
        if message.startswith("HTTP 400") and "does not support tools" in said:
            return "this model cannot call tools in Ollama: pick one tagged \"tools\" (ollama.com/search?c=tools)"
        if message.startswith("cannot reach") and "connection refused" in said:
            return "is Ollama running? (ollama serve)"
        return ""

    def _read(self, response: httpx.Response, turn: TurnAssembler, emit: Callable[[Event], None],
              cancel: Cancel) -> AssistantMessage:
        """JSON lines (streamed) or one JSON object (stream: false), read under the idle deadline."""
        kind = response.headers.get("content-type", "").partition(";")[0].strip()
        if "json" not in kind:
            raise ModelError(self.clean(f"{self.shown} did not answer with JSON (Content-Type {kind!r}); "
                                        "is it an Ollama server?"))
        decoder, chunks = LineDecoder(), OllamaChunks()
        idle = Idle(self.read_timeout, self.clock, self.first_token_timeout)
        seen = False
        for data in response.iter_bytes():
            for line in decoder.feed(data):
                seen = True
                if self._take_line(line, turn, chunks, emit):
                    return turn.finish()
            if cancel.is_set():
                raise Cancelled(turn.partial())
            if idle.expired(turn.progress):
                raise IncompleteTurn(idle.message(0), turn.partial())
        for line in decoder.close():
            seen = True
            if self._take_line(line, turn, chunks, emit):
                break
        if cancel.is_set():  # the hang-up ends the byte stream early
            raise Cancelled(turn.partial())
        if not seen:
            raise EmptyStream("the model stream ended without a finish reason (cut short or empty): "
                              "the server sent nothing", turn.partial())
        return turn.finish()

    def _take_line(self, line: str, turn: TurnAssembler, chunks: OllamaChunks, emit: Callable[[Event], None]) -> bool:
        """Feed one reply object; True once it is the last (`done: true`)."""
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise IncompleteTurn(f"the server sent a line that is not JSON: {line[:120]!r}", turn.partial()) from exc
        if not isinstance(obj, dict):
            raise IncompleteTurn(f"the server sent a line that is not a JSON object: {line[:120]!r}", turn.partial())
        for event in turn.feed(chunks.chunk(obj)):
            emit(event)
        return obj.get("done") is True
