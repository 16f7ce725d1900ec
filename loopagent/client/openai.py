"""OpenAI-compatible chat-completions client: httpx + SSE, retries before the first byte only."""

from __future__ import annotations

import email.utils
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import EventSource, SSEError

from loopagent.client import IncompleteTurn, ModelError
from loopagent.client.assemble import TurnAssembler
from loopagent.events import Event
from loopagent.messages import AssistantMessage, Message, SystemMessage, ToolResult, UserMessage

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


def build_request(
    model: str, messages: Sequence[Message], tools: list[dict], max_tokens: int
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [wire_message(m) for m in messages],
        "stream": True,
        "stream_options": {"include_usage": True},
        # Always bounded: a llama.cpp server without it may generate for minutes.
        "max_tokens": max_tokens,
    }
    if tools:
        body["tools"] = tools
        body["tool_choice"] = "auto"
    return body


@dataclass
class OpenAIClient:
    base_url: str
    model: str
    api_key: str | None = None
    max_tokens: int = 4096
    retries: int = 4
    connect_timeout: float = 10.0
    read_timeout: float = 300.0
    backoff: float = 0.5
    max_backoff: float = 30.0
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        self.url = self.base_url.rstrip("/") + "/chat/completions"
        headers = {"Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        self._http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(self.read_timeout, connect=self.connect_timeout),
            trust_env=False,  # never route a local model server through a proxy from the environment
        )

    def close(self) -> None:
        self._http.close()

    def complete(
        self, messages: Sequence[Message], tools: list[dict], emit: Callable[[Event], None]
    ) -> AssistantMessage:
        body = build_request(self.model, messages, tools, self.max_tokens)
        attempt = 0
        while True:
            try:
                with self._http.stream("POST", self.url, json=body) as response:
                    if response.status_code in RETRY_STATUS and attempt < self.retries:
                        delay = self._delay(attempt, response.headers.get("retry-after"))
                    elif response.status_code >= 400:
                        response.read()
                        raise ModelError(
                            f"HTTP {response.status_code} from {self.url}: {_server_message(response)}"
                        )
                    else:
                        # From here on bytes have arrived: nothing is retried.
                        return self._consume(response, emit)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if attempt >= self.retries:
                    raise ModelError(
                        f"cannot reach {self.url}: {_reason(exc)} (after {attempt + 1} attempts)"
                    ) from exc
                delay = self._delay(attempt, None)
            attempt += 1
            self.sleep(delay)

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        """Exponential backoff with jitter; a server's Retry-After wins, within the cap."""
        if retry_after:
            seconds = _parse_retry_after(retry_after)
            if seconds is not None:
                return min(max(seconds, 0.0), self.max_backoff)
        return min(self.backoff * (2**attempt) * (0.5 + random.random() / 2), self.max_backoff)

    def _consume(self, response: httpx.Response, emit: Callable[[Event], None]) -> AssistantMessage:
        turn = TurnAssembler()
        try:
            if "json" in response.headers.get("content-type", ""):
                # A server that ignored stream: true and sent one JSON reply.
                response.read()
                for event in turn.feed(response.json()):
                    emit(event)
                return turn.finish()
            for sse in EventSource(response).iter_sse():
                data = sse.data.strip()
                if not data:
                    continue
                if data == "[DONE]":
                    break
                try:
                    chunk = json.loads(data)
                except json.JSONDecodeError as exc:
                    raise IncompleteTurn(f"the server sent a chunk that is not JSON: {data[:120]!r}") from exc
                for event in turn.feed(chunk):
                    emit(event)
        except SSEError as exc:
            raise ModelError(f"{self.url} did not answer with an event stream: {exc}") from exc
        except httpx.HTTPError as exc:
            raise IncompleteTurn(f"the model stream broke off: {_reason(exc)}") from exc
        return turn.finish()


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
