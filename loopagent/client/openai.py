"""OpenAI-compatible chat-completions client: httpx + a bounded SSE decoder, retries before the first byte only."""

from __future__ import annotations

import email.utils
import json
import operator
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from loopagent.client import Cancelled, CancelSignal, IncompleteTurn, ModelError
from loopagent.client.assemble import TurnAssembler
from loopagent.client.sse import MAX_LINE_BYTES, LineTooLong, SSEDecoder
from loopagent.client.watch import Hangup, Idle, on_cancel
from loopagent.events import Event
from loopagent.messages import AssistantMessage, Message, SystemMessage, ToolResult, UserMessage
from loopagent.secrets import Redactor, public_url, url_secrets

if TYPE_CHECKING:
    from loopagent.tools.spec import ToolSpec

RETRY_STATUS = {429, 500, 502, 503, 504}


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
    model: str, messages: Sequence[Message], tools: Sequence[ToolSpec | dict], max_tokens: int
) -> dict[str, Any]:
    """The request body as a dict (tests and tools that want to look at it)."""
    return json.loads(WireEncoder().encode(model, messages, tools, max_tokens))


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

    def fragment(self, msg: Message) -> str:
        hit = self._fragments.get(id(msg))
        if hit is None or hit[0] is not msg:
            hit = (msg, json.dumps(wire_message(msg), ensure_ascii=False))
            self._fragments[id(msg)] = hit
        return hit[1]

    def encode(self, model: str, messages: Sequence[Message], tools: Sequence[ToolSpec | dict],
               max_tokens: int) -> str:
        last, n = self._last, len(self._last)
        # Identity check at C speed; any replaced message (a stub, a compaction) re-joins from scratch.
        if 0 < n <= len(messages) and all(map(operator.is_, last, messages[:n])):
            new = [self.fragment(m) for m in messages[n:]]
            joined = ",".join([self._last_joined, *new]) if new else self._last_joined
        else:
            joined = ",".join(self.fragment(m) for m in messages)
        self._last, self._last_joined = list(messages), joined
        return _envelope(model, tools, max_tokens)[:-1] + ', "messages": [' + joined + "]}"


def _envelope(model: str, tools: Sequence[ToolSpec | dict], max_tokens: int) -> str:
    body: dict[str, Any] = {
        "model": model,
        "stream": True,
        "stream_options": {"include_usage": True},
        # Always bounded: a llama.cpp server without it may generate for minutes.
        "max_tokens": max_tokens,
    }
    if tools:
        body["tools"] = wire_tools(tools)
        body["tool_choice"] = "auto"
    return json.dumps(body, ensure_ascii=False)


@dataclass
class OpenAIClient:
    base_url: str = field(repr=False)  # may carry user:password and a key in its query
    model: str
    api_key: str | None = field(default=None, repr=False)
    max_tokens: int = 4096
    retries: int = 4
    connect_timeout: float = 10.0
    read_timeout: float = 300.0
    backoff: float = 0.5
    max_backoff: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    # An httpx.BaseTransport (httpx.MockTransport in tests, one per agent); None: httpx's own.
    transport: httpx.BaseTransport | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.url = endpoint(self.base_url)
        # Userinfo in the URL becomes basic auth (httpx does it); messages name only the public form.
        self.shown = public_url(self.url) or "(an invalid URL)"
        self._hide = Redactor(url_secrets(self.url))
        headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        self._encoder = WireEncoder()
        self._last_stream: Any = None  # the connection of the last response: a reused one has no connect event
        self._http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(self.read_timeout, connect=self.connect_timeout),
            trust_env=False,  # never route a local model server through a proxy from the environment
            transport=self.transport,
        )

    def close(self) -> None:
        self._http.close()

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec | dict], emit: Callable[[Event], None],
        cancel: CancelSignal | None = None,
    ) -> AssistantMessage:
        """One streamed turn. Raises ModelError, IncompleteTurn, or Cancelled once `cancel` is set."""
        body = self._encoder.encode(self.model, messages, tools, self.max_tokens).encode("utf-8")
        line = Hangup(self._stream_seen, self._last_stream)
        remove = on_cancel(cancel, line.hang_up)
        try:
            return self._attempts(body, emit, cancel, line)
        finally:
            line.done()
            if remove is not None:
                remove()

    def _attempts(self, body: bytes, emit: Callable[[Event], None], cancel: CancelSignal | None,
                  line: Hangup) -> AssistantMessage:
        attempt = 0
        while True:
            if cancel is not None and cancel.is_set():
                raise Cancelled(AssistantMessage(stop_reason="incomplete"))
            try:
                with self._http.stream("POST", self.url, content=body,
                                       extensions={"trace": line.trace}) as response:
                    line.answered(response)
                    if response.status_code in RETRY_STATUS and attempt < self.retries:
                        delay = self._delay(attempt, response.headers.get("retry-after"))
                    elif response.status_code >= 400:
                        response.read()
                        raise ModelError(self.clean(
                            f"HTTP {response.status_code} from {self.shown}: {_server_message(response)}"
                        ))
                    else:
                        # From here on bytes have arrived: nothing is retried.
                        return self._consume(response, emit, cancel)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if attempt >= self.retries:
                    raise ModelError(self.clean(
                        f"cannot reach {self.shown}: {_reason(exc)} (after {attempt + 1} attempts)"
                    )) from exc
                delay = self._delay(attempt, None)
            except (httpx.HTTPError, httpx.InvalidURL) as exc:  # bad scheme or URL, timeout before any byte
                if cancel is not None and cancel.is_set():
                    raise Cancelled(AssistantMessage(stop_reason="incomplete")) from exc
                raise ModelError(self.clean(f"cannot reach {self.shown}: {_reason(exc)}")) from exc
            attempt += 1
            wait = getattr(cancel, "wait", None)
            wait(delay) if callable(wait) else self.sleep(delay)  # a cancel token's wait ends early on set

    def _stream_seen(self, stream: Any) -> None:
        self._last_stream = stream

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        """Exponential backoff with jitter; a server's Retry-After wins, within the cap."""
        if retry_after:
            seconds = _parse_retry_after(retry_after)
            if seconds is not None:
                return min(max(seconds, 0.0), self.max_backoff)
        return min(self.backoff * (2**attempt) * (0.5 + random.random() / 2), self.max_backoff)

    def _consume(self, response: httpx.Response, emit: Callable[[Event], None],
                 cancel: CancelSignal | None) -> AssistantMessage:
        turn = TurnAssembler()
        kind = response.headers.get("content-type", "")
        try:
            if "json" in kind:
                # A server that ignored stream: true and sent one JSON reply.
                for event in turn.feed(self._json_body(response, turn, cancel)):
                    emit(event)
                return turn.finish()
            if "text/event-stream" not in kind.partition(";")[0]:
                raise ModelError(self.clean(f"{self.shown} did not answer with an event stream "
                                            f"(Content-Type {kind.partition(';')[0]!r})"))
            return self._events(response, turn, emit, cancel)
        except LineTooLong as exc:
            raise IncompleteTurn(f"the model stream was abandoned: {exc}", turn.partial()) from exc
        except httpx.HTTPError as exc:
            if cancel is not None and cancel.is_set():
                raise Cancelled(turn.partial()) from exc
            why = (f"no data from the model for {self.read_timeout:g} s" if isinstance(exc, httpx.ReadTimeout)
                   else _reason(exc))
            raise IncompleteTurn(self.clean(f"the model stream broke off: {why}"), turn.partial()) from exc

    def _events(self, response: httpx.Response, turn: TurnAssembler, emit: Callable[[Event], None],
                cancel: CancelSignal | None) -> AssistantMessage:
        """Read the event stream under the idle deadline; the turn, once finished."""
        decoder, idle = SSEDecoder(), Idle(self.read_timeout, self.clock)
        for chunk in response.iter_bytes():
            for data in decoder.feed(chunk):
                if self._take(data, turn, emit):
                    return turn.finish()
            if cancel is not None and cancel.is_set():
                raise Cancelled(turn.partial())
            if idle.expired(turn.progress):
                if turn.finish_reason is not None:  # finished, but the server never closed the stream
                    return turn.finish()
                raise IncompleteTurn(idle.message(decoder.comments), turn.partial())
        for data in decoder.close():
            if self._take(data, turn, emit):
                break
        if cancel is not None and cancel.is_set():  # the hang-up ends the byte stream early
            raise Cancelled(turn.partial())
        return turn.finish()

    def _take(self, data: str, turn: TurnAssembler, emit: Callable[[Event], None]) -> bool:
        """Feed one event's data; True at `[DONE]`."""
        data = data.strip()
        if not data:
            return False
        if data == "[DONE]":
            return True
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as exc:
            raise IncompleteTurn(f"the server sent a chunk that is not JSON: {data[:120]!r}",
                                 turn.partial()) from exc
        if not isinstance(chunk, dict):
            raise IncompleteTurn(f"the server sent a chunk that is not a JSON object: {data[:120]!r}",
                                 turn.partial())
        for event in turn.feed(chunk):
            emit(event)
        return False

    def _json_body(self, response: httpx.Response, turn: TurnAssembler, cancel: CancelSignal | None) -> dict:
        """A whole JSON reply, read under the same size limit as one event."""
        parts, size = [], 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > MAX_LINE_BYTES:
                raise LineTooLong(f"the JSON reply passed {MAX_LINE_BYTES // (1024 * 1024)} MB")
            if cancel is not None and cancel.is_set():
                raise Cancelled(turn.partial())
            parts.append(chunk)
        try:
            payload = json.loads(b"".join(parts))
        except ValueError as exc:
            raise IncompleteTurn(f"the server's JSON reply is broken: {exc}") from exc
        if not isinstance(payload, dict):
            raise IncompleteTurn("the server's JSON reply is not an object")
        return payload

    def clean(self, message: str) -> str:
        """An error message that cannot name the URL's credentials, however httpx worded it."""
        return self._hide.redact(message.replace(self.url, self.shown))


def endpoint(base_url: str) -> str:
    """The chat-completions URL under `base_url`, keeping its query (`?api-version=...`) in place."""
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return base_url.rstrip("/") + "/chat/completions"  # httpx will say what is wrong with it
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/chat/completions", fragment=""))


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    if "refused" in text.lower() or "Errno 111" in text:
        return "connection refused"
    return text


def _server_message(response: httpx.Response) -> str:
    try:
        payload = response.json()
    except ValueError:
        return response.text.strip()[:500] or response.reason_phrase
    err = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])
    if isinstance(err, str):
        return err
    return json.dumps(payload)[:500]


def _parse_retry_after(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return email.utils.parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return None
