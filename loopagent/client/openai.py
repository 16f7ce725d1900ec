"""OpenAI-compatible chat-completions client: httpx + a bounded SSE decoder, retries before the first byte only.

A server that cannot stream a request with tools (an empty 200 body, or an error that says so)
gets that request once more without streaming, and the client remembers it (servers.json). A
finished reply whose text is a call of a known tool (see textcalls.py) becomes that call.
"""

from __future__ import annotations

import email.utils
import json
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from loopagent.client import Cancelled, IncompleteTurn, ModelError, ServerUnavailable
from loopagent.client.assemble import EmptyStream, OutputCut, TurnAssembler, explain_empty, finished
from loopagent.client.sse import MAX_LINE_BYTES, LineTooLong, SSEDecoder
from loopagent.client.textcalls import recovered
from loopagent.client.watch import Hangup, Idle
from loopagent.client.wire import WireEncoder, build_request, wire_message, wire_tool, wire_tools
from loopagent.events import Event, Notice
from loopagent.messages import AssistantMessage, Message
from loopagent.secrets import Redactor, public_url, url_secrets

if TYPE_CHECKING:
    from loopagent.cancel import Cancel
    from loopagent.servers import ServerBook
    from loopagent.tools.spec import ToolSpec

__all__ = ["OpenAIClient", "WireEncoder", "build_request", "endpoint", "wire_message", "wire_tool", "wire_tools"]

RETRY_STATUS = {429, 500, 502, 503, 504}
# How servers that cannot stream tool calls say so (llama-cpp-python, older llama-server, Ollama).
NO_STREAM_TOOLS = re.compile(
    r"cannot use tools with stream|streaming tool choice is not supported|tools param requires --jinja"
    r"|does not support (?:tools with )?stream(?:ing)? (?:with )?tools", re.I)


class StreamToolsRefused(ModelError):
    """An HTTP error whose message says the server cannot stream a request with tools."""


@dataclass
class OpenAIClient:
    base_url: str = field(repr=False)  # may carry user:password and a key in its query
    model: str
    api_key: str | None = field(default=None, repr=False)
    max_tokens: int = 4096
    retries: int = 4
    connect_timeout: float = 10.0
    read_timeout: float = 300.0
    first_token_timeout: float = 0.0  # the idle deadline before the first token, when longer (client/watch.py)
    backoff: float = 0.5
    max_backoff: float = 30.0
    # The pause between retries; None waits on the turn's cancel token, which a cancel ends at once.
    sleep: Callable[[float], None] | None = None
    clock: Callable[[], float] = time.monotonic
    # An httpx.BaseTransport (httpx.MockTransport in tests, one per agent); None: httpx's own.
    transport: httpx.BaseTransport | None = field(default=None, repr=False)
    temperature: float | None = None  # sent only when set
    top_p: float | None = None
    # Whether requests with tools are streamed: None learns it (servers.json), False never streams them.
    stream_tools: bool | None = None
    servers: ServerBook | None = field(default=None, repr=False)  # what was learned about servers
    provider: str = "openai"
    recover_text_calls: bool = True  # a call written into the text of a known tool becomes a call
    # --output-schema's second request: {"name", "schema", "strict"}, sent as `response_format` (client/shaped.py)
    schema: dict[str, Any] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.url = endpoint(self.base_url)
        # Userinfo in the URL becomes basic auth (httpx does it); messages name only the public form.
        self.shown = public_url(self.url) or "(an invalid URL)"
        self._hide = Redactor([*url_secrets(self.url), *([self.api_key] if self.api_key else [])])
        headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        self._encoder = WireEncoder()
        self.sampling = {k: v for k, v in (("temperature", self.temperature), ("top_p", self.top_p))
                         if v is not None}
        self._streams_tools: bool | None = None  # learned, read from servers.json on first use
        self._last_stream: Any = None  # the connection of the last response: a reused one has no connect event
        self._headers = headers
        self._http = self._connect()

    def _connect(self) -> httpx.Client:
        from loopagent.client.http import connect

        return connect(self.url, headers=self._headers, transport=self.transport,
                       timeout=httpx.Timeout(self.read_timeout, connect=self.connect_timeout))

    def close(self) -> None:
        self._http.close()

    def sibling(self) -> OpenAIClient:
        """A client for a child agent (`task`): its own per-request state over this one's connection pool
        (an httpx.Client is thread-safe, and a new one costs ~50 ms of TLS set-up even for http://). The
        child never closes it: the pool is this client's."""
        import copy

        twin = copy.copy(self)
        twin._encoder, twin._last_stream = WireEncoder(), None
        return twin

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec | dict], emit: Callable[[Event], None],
        cancel: Cancel,
    ) -> AssistantMessage:
        """One turn, streamed unless the server cannot stream tool calls. Raises ModelError,
        IncompleteTurn, or Cancelled once `cancel` is set."""
        if self.schema is not None:
            from loopagent.client.shaped import complete_shaped

            return complete_shaped(self, messages, emit, cancel)
        stream = not tools or self.streams_tools(emit)
        try:
            reply = self.send(messages, tools, emit, cancel, stream)
        except (EmptyStream, StreamToolsRefused) as exc:
            if not tools or not stream or self.stream_tools:  # streaming tools set on: no second guess
                raise
            reply = self.fall_back(messages, tools, emit, cancel, exc)
        if self.recover_text_calls and tools and (found := recovered(reply, tools)) is not None:
            names = ", ".join(c.name for c in found.tool_calls)
            emit(Notice("recovered", f"the model wrote {_calls(len(found.tool_calls))} into its text ({names}); "
                                     "taken as tool calls"))
            return found
        return reply

    def streams_tools(self, emit: Callable[[Event], None]) -> bool:
        """Whether a request with tools is streamed: the setting, else what servers.json says."""
        if self.stream_tools is not None:
            return self.stream_tools
        if self._streams_tools is None:
            self._streams_tools = True
            if self.servers is not None:
                self.servers.notify = lambda text: emit(Notice("warning", text))
                self._streams_tools = self.servers.get(self.server_key).stream_tools is not False
        return self._streams_tools

    @property
    def server_key(self) -> str:
        from loopagent.servers import server_key

        return server_key(self.provider, self.base_url, self.model)

    def fall_back(self, messages: Sequence[Message], tools: Sequence[ToolSpec | dict],
                  emit: Callable[[Event], None], cancel: Cancel, why: Exception) -> AssistantMessage:
        """The one extra request of a turn: the same one without streaming; remembered when it works."""
        what = "an empty reply" if isinstance(why, EmptyStream) else f"\"{str(why)[-160:]}\""
        emit(Notice("fallback", f"{self.shown} answered a streamed request with tools with {what}; "
                                "sending it again without streaming (and from now on for this server)"))
        self._streams_tools = False
        # llama-cpp-python fails after the headers and leaves a connection that looks reusable but
        # drops the next request ("Server disconnected without sending a response"): start afresh.
        if self.transport is None:
            self._http.close()
            self._http, self._last_stream = self._connect(), None
        try:
            reply = self.send(messages, tools, emit, cancel, stream=False)
        except IncompleteTurn as exc:
            if isinstance(exc, OutputCut):
                raise
            raise IncompleteTurn(f"{exc} (also when sent without streaming)", exc.partial) from exc
        if self.servers is not None:
            self.servers.notify = lambda text: emit(Notice("warning", text))
            self.servers.update(self.server_key, stream_tools=False)
        return reply

    def send(self, messages: Sequence[Message], tools: Sequence[ToolSpec | dict], emit: Callable[[Event], None],
             cancel: Cancel, stream: bool = True, schema: dict[str, Any] | None = None) -> AssistantMessage:
        """One request (with its retries before the first byte) and its reply; `schema` goes as `response_format`."""
        body = self._encoder.encode(self.model, messages, tools, self.max_tokens, stream, self.sampling, schema)
        line = Hangup(self._stream_seen, self._last_stream)
        remove = cancel.on_cancel(line.hang_up)
        try:
            return self._attempts(body.encode("utf-8"), emit, cancel, line, stream, stream and bool(tools))
        except OutputCut as exc:
            exc.limit = self.max_tokens
            raise
        except IncompleteTurn as exc:  # an empty reply beside tools: say why, when this server is known for it
            explained = explain_empty(exc, bool(tools), not stream or self._streams_tools is False)
            if explained is exc:
                raise
            raise explained from exc
        finally:
            line.done()
            remove()

    def _attempts(self, body: bytes, emit: Callable[[Event], None], cancel: Cancel,
                  line: Hangup, stream: bool = True, streamed_tools: bool = False) -> AssistantMessage:
        attempt = 0
        while True:
            if cancel.is_set():
                raise Cancelled(AssistantMessage(stop_reason="incomplete"))
            try:
                with self._http.stream("POST", self.url, content=body, extensions={"trace": line.trace},
                                       headers=None if stream else {"Accept": "application/json"}) as response:
                    line.answered(response)
                    if streamed_tools and response.status_code >= 400:
                        response.read()  # a refusal to stream tools is not worth the retries
                        if NO_STREAM_TOOLS.search(said := _server_message(response)):
                            raise StreamToolsRefused(self.clean(
                                f"HTTP {response.status_code} from {self.shown}: {said}"))
                    if response.status_code in RETRY_STATUS and attempt < self.retries:
                        delay = self._delay(attempt, response.headers.get("retry-after"))
                        emit(Notice("retry", self.clean(f"HTTP {response.status_code} from {self.shown}; "
                                                        f"{self._retrying(attempt, delay)}")))
                    elif response.status_code >= 400:
                        response.read()
                        raise self._refusal(response)
                    else:
                        # From here on bytes have arrived: nothing is retried.
                        return self._consume(response, emit, cancel)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if attempt >= self.retries:
                    from loopagent.counts import counted

                    raise ServerUnavailable(self.clean(
                        f"cannot reach {self.shown}: {_reason(exc)} (after {counted(attempt + 1, 'attempt')})"
                    )) from exc
                delay = self._delay(attempt, None)
                emit(Notice("retry", self.clean(f"cannot reach {self.shown}: {_reason(exc)}; "
                                                f"{self._retrying(attempt, delay)}")))
            except (httpx.HTTPError, httpx.InvalidURL) as exc:  # bad scheme or URL, timeout before any byte
                if cancel.is_set():
                    raise Cancelled(AssistantMessage(stop_reason="incomplete")) from exc
                failed = ModelError if isinstance(exc, httpx.TimeoutException) else ServerUnavailable
                raise failed(self.clean(f"cannot reach {self.shown}: {_reason(exc)}")) from exc
            attempt += 1
            (self.sleep or cancel.wait)(delay)

    def _refusal(self, response: httpx.Response) -> ModelError:
        """The error for an HTTP error status: a refused key, a request too long for the window (whose size,
        when the server states it, is kept in servers.json for the next run), or the server's own words."""
        from loopagent.client.refusal import SOURCE, WindowExceeded, refusal

        heading = self.clean(f"HTTP {response.status_code} from {self.shown}: {_server_message(response)}")
        try:
            body = response.json()
        except ValueError:
            body = None
        found = refusal(response.status_code, heading, body)
        if isinstance(found, WindowExceeded) and found.window and self.servers is not None:
            learned = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            self.servers.update(self.server_key, ctx_size=found.window, ctx_source=SOURCE, ctx_learned=learned)
        return found

    def _retrying(self, attempt: int, delay: float) -> str:
        return f"retrying ({attempt + 2}/{self.retries + 1}) in {delay:.1f} s"

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
                 cancel: Cancel) -> AssistantMessage:
        turn = TurnAssembler()
        try:
            return self._read(response, turn, emit, cancel)
        except LineTooLong as exc:
            raise IncompleteTurn(f"the model stream was abandoned: {exc}", turn.partial()) from exc
        except httpx.HTTPError as exc:
            if cancel.is_set():
                raise Cancelled(turn.partial()) from exc
            why = (f"no data from the model for {self.read_timeout:g} s" if isinstance(exc, httpx.ReadTimeout)
                   else _reason(exc))
            raise IncompleteTurn(self.clean(f"the model stream broke off: {why}"), turn.partial()) from exc

    def _read(self, response: httpx.Response, turn: TurnAssembler, emit: Callable[[Event], None],
              cancel: Cancel) -> AssistantMessage:
        """The turn from a response's body (another wire form, Ollama's, reads it its own way)."""
        kind = response.headers.get("content-type", "")
        if "json" in kind:
            # A server that ignored stream: true and sent one JSON reply.
            for event in turn.feed(self._json_body(response, turn, cancel)):
                emit(event)
            return finished(turn, emit)
        if "text/event-stream" not in kind.partition(";")[0]:
            raise ModelError(self.clean(f"{self.shown} did not answer with an event stream "
                                        f"(Content-Type {kind.partition(';')[0]!r})"))
        return self._events(response, turn, emit, cancel)

    def _events(self, response: httpx.Response, turn: TurnAssembler, emit: Callable[[Event], None],
                cancel: Cancel) -> AssistantMessage:
        """Read the event stream under the idle deadline; the turn, once finished."""
        decoder, idle = SSEDecoder(), Idle(self.read_timeout, self.clock, self.first_token_timeout)
        seen = False
        for chunk in response.iter_bytes():
            for data in decoder.feed(chunk):
                seen = True
                if self._take(data, turn, emit):
                    return finished(turn, emit)
            if cancel.is_set():
                raise Cancelled(turn.partial())
            if idle.expired(turn.progress):
                if turn.finish_reason is not None:  # finished, but the server never closed the stream
                    return turn.finish()
                raise IncompleteTurn(idle.message(decoder.comments), turn.partial())
        for data in decoder.close():
            seen = True
            if self._take(data, turn, emit):
                return finished(turn, emit)
        if cancel.is_set():  # the hang-up ends the byte stream early
            raise Cancelled(turn.partial())
        if not seen:  # not one event: a refusal after the headers (tools it cannot stream, a full context)
            raise EmptyStream("the model stream ended without a finish reason (cut short or empty): "
                              "the server sent no events", turn.partial())
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

    def _json_body(self, response: httpx.Response, turn: TurnAssembler, cancel: Cancel) -> dict:
        """A whole JSON reply, read under the same size limit as one event."""
        parts, size = [], 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > MAX_LINE_BYTES:
                raise LineTooLong(f"the JSON reply passed {MAX_LINE_BYTES // (1024 * 1024)} MB")
            if cancel.is_set():
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


def _calls(n: int) -> str:
    return f"{n} tool call" if n == 1 else f"{n} tool calls"


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
