"""One listener that turns the event stream into OpenTelemetry GenAI spans and metrics.

Spans (GenAI semantic conventions): `invoke_agent loop` per run (a REPL task is a run), under it
`chat MODEL` per model request and `execute_tool NAME` per call. Attributes: gen_ai.* as the
conventions name them, and loop's own: loop.time_to_first_token and loop.tokens_per_second on chat,
loop.tool.outcome, loop.policy.decision and loop.sandboxed on execute_tool. Metrics:
gen_ai.client.token.usage and gen_ai.client.operation.duration per chat request.

No prompt, answer or tool text becomes an attribute unless `Facts.content` (telemetry_content: true),
and then only through `Facts.redact`, so neither the API key nor a scrubbed value can reach a collector.
A listener never raises: a failure here is dropped, never the run's.
"""

from __future__ import annotations

import json
import time
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from loopagent.events import (
    AgentStart,
    AssistantDone,
    Compacted,
    Event,
    RunEnd,
    SessionStarted,
    TextDelta,
    ThinkingDelta,
    ToolCalled,
    ToolFinished,
    ToolStarted,
    TurnStart,
    TurnTokens,
)
from loopagent.telemetry import Facts

# The conventions' advised buckets (seconds; tokens).
DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
FINISH = {"stop": "stop", "tool_calls": "tool_calls", "length": "length", "incomplete": "error", "error": "error",
          "interrupted": "cancelled"}


class Chat:
    """A model request in flight: its span, when it started, when its first token came, its usage."""

    def __init__(self, span: Any, purpose: str):
        self.span, self.purpose = span, purpose
        self.start = time.monotonic()
        self.first: float | None = None
        self.output_tokens = 0


class GenAITelemetry:
    """Listener: GenAI spans and metrics from one agent's events (see the module's docstring)."""

    def __init__(self, tracer_provider: Any, meter_provider: Any, facts: Facts, flush: bool = False):
        from loopagent import __version__

        self.providers = (tracer_provider, meter_provider)
        self.tracer = tracer_provider.get_tracer("loopagent", __version__)
        meter = meter_provider.get_meter("loopagent", __version__)
        self.tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}",
                                             description="Tokens used per model request",
                                             explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
        self.duration = meter.create_histogram("gen_ai.client.operation.duration", unit="s",
                                               description="Duration of a model request",
                                               explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
        self.facts, self.flush = facts, flush
        self.common = {"gen_ai.provider.name": facts.provider, "gen_ai.system": facts.provider,
                       "gen_ai.request.model": facts.model, **server(facts.base_url)}
        self.session = ""
        self.agent: Any = None  # the invoke_agent span of the run in progress
        self.chat: Chat | None = None
        self.tools: dict[str, tuple[Any, bool]] = {}  # call id -> (span, passed the policy)
        self.handlers = {SessionStarted: self.on_session, AgentStart: self.on_start, TurnStart: self.on_turn,
                         TextDelta: self.on_token, ThinkingDelta: self.on_token, TurnTokens: self.on_tokens,
                         AssistantDone: self.on_answer, Compacted: self.on_compacted, ToolCalled: self.on_call,
                         ToolStarted: self.on_started, ToolFinished: self.on_finished, RunEnd: self.on_end}

    def __call__(self, event: Event) -> None:
        handler = self.handlers.get(type(event))
        if handler is None:
            return
        try:
            handler(event)
        except Exception:  # noqa: BLE001 - telemetry must never be what stops a run
            pass

    def text(self, value: str) -> str:
        return self.facts.redact(value)

    def child(self, name: str, kind: SpanKind = SpanKind.INTERNAL, **attributes: Any) -> Any:
        context = trace.set_span_in_context(self.agent) if self.agent is not None else None
        return self.tracer.start_span(name, context=context, kind=kind, attributes=attributes)

    def on_session(self, event: SessionStarted) -> None:
        self.session = event.id

    def on_start(self, event: AgentStart) -> None:
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "loop", **self.common}
        if self.session:
            attributes["gen_ai.conversation.id"] = self.session
        if self.facts.content:
            attributes["gen_ai.input.messages"] = json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": self.text(event.task)}]}])
        self.agent = self.tracer.start_span("invoke_agent loop", kind=SpanKind.INTERNAL, attributes=attributes)

    def on_turn(self, event: TurnStart) -> None:
        self.end_chat("a new request began")  # one in flight at a time; a leftover is closed, not leaked
        attributes = {"gen_ai.operation.name": "chat", **self.common, "loop.step": event.step,
                      "loop.purpose": event.purpose}
        if self.facts.max_tokens:
            attributes["gen_ai.request.max_tokens"] = self.facts.max_tokens
        self.chat = Chat(self.child(f"chat {self.facts.model}", SpanKind.CLIENT, **attributes), event.purpose)

    def on_token(self, event: TextDelta | ThinkingDelta) -> None:
        if self.chat is not None and self.chat.first is None:
            self.chat.first = time.monotonic()
            self.chat.span.set_attribute("loop.time_to_first_token", self.chat.first - self.chat.start)

    def on_tokens(self, event: TurnTokens) -> None:
        if self.chat is None:
            return
        self.usage(self.chat, event.usage.prompt_tokens, event.usage.completion_tokens, event.estimated)

    def usage(self, chat: Chat, prompt: int, completion: int, estimated: bool = False) -> None:
        chat.output_tokens = completion
        chat.span.set_attributes({"gen_ai.usage.input_tokens": prompt, "gen_ai.usage.output_tokens": completion,
                                  "loop.usage.estimated": estimated})
        metric = {"gen_ai.operation.name": "chat", **self.common}
        self.tokens.record(prompt, {**metric, "gen_ai.token.type": "input"})
        self.tokens.record(completion, {**metric, "gen_ai.token.type": "output"})

    def on_answer(self, event: AssistantDone) -> None:
        if self.chat is None:
            return
        message = event.message
        self.chat.span.set_attribute("gen_ai.response.finish_reasons", [FINISH.get(message.stop_reason, "stop")])
        if self.facts.content:
            parts = [{"type": "text", "content": self.text(message.text)}] if message.text else []
            parts += [{"type": "tool_call", "id": c.id, "name": c.name, "arguments": self.text(c.arguments)}
                      for c in message.tool_calls]
            self.chat.span.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": parts}]))
        self.end_chat()

    def on_compacted(self, event: Compacted) -> None:
        if self.chat is not None:
            self.usage(self.chat, event.usage.prompt_tokens, event.usage.completion_tokens)
            self.end_chat()

    def end_chat(self, error: str = "") -> None:
        """End the request in flight: its speed, its duration metric, its status."""
        chat, self.chat = self.chat, None
        if chat is None:
            return
        now = time.monotonic()
        streamed = now - (chat.first if chat.first is not None else chat.start)
        if chat.output_tokens and streamed > 0:
            chat.span.set_attribute("loop.tokens_per_second", chat.output_tokens / streamed)
        attributes = {"gen_ai.operation.name": "chat", **self.common}
        if error:
            chat.span.set_status(Status(StatusCode.ERROR, self.text(error)[:500]))
            chat.span.set_attribute("error.type", "incomplete")
            attributes["error.type"] = "incomplete"
        self.duration.record(now - chat.start, attributes)
        chat.span.end()

    def on_call(self, event: ToolCalled) -> None:
        call = event.call
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name,
                      "gen_ai.tool.call.id": call.id, "gen_ai.tool.type": "function",
                      "loop.sandboxed": call.name in self.facts.sandboxed}
        if self.facts.content:
            attributes["gen_ai.tool.call.arguments"] = self.text(call.arguments)
        self.tools[call.id] = (self.child(f"execute_tool {call.name}", **attributes), False)

    def on_started(self, event: ToolStarted) -> None:
        if (found := self.tools.get(event.call.id)) is not None:
            self.tools[event.call.id] = (found[0], True)

    def on_finished(self, event: ToolFinished) -> None:
        span, ran = self.tools.pop(event.call.id, (None, False))
        if span is None:
            return
        result = event.result
        outcome = result.details.outcome if result.details is not None else ("error" if result.is_error else "ok")
        outcome = "error" if outcome == "timeout" else outcome
        span.set_attribute("loop.tool.outcome", outcome)
        if ran or outcome == "denied":
            span.set_attribute("loop.policy.decision", "allow" if ran else "deny")
        if self.facts.content:
            span.set_attribute("gen_ai.tool.call.result", self.text(result.content))
        if result.is_error:
            span.set_status(Status(StatusCode.ERROR))
            span.set_attribute("error.type", outcome)
        span.end()

    def on_end(self, event: RunEnd) -> None:
        self.end_chat("" if event.status == "completed" else event.message or event.status)
        for span, _ in self.tools.values():  # calls that never got a result (the run stopped under them)
            span.set_attribute("loop.tool.outcome", "cancelled")
            span.end()
        self.tools.clear()
        agent, self.agent = self.agent, None
        if agent is not None:
            agent.set_attributes({"gen_ai.usage.input_tokens": event.usage.prompt_tokens,
                                  "gen_ai.usage.output_tokens": event.usage.completion_tokens,
                                  "loop.status": event.status, "loop.steps": event.steps})
            if event.exit_code != 0:
                agent.set_status(Status(StatusCode.ERROR, self.text(event.message or event.status)[:500]))
                agent.set_attribute("error.type", event.status)
            agent.end()
        if self.flush:  # a one-shot run exits next: what it recorded leaves now
            for provider in self.providers:
                provider.force_flush(5000)


def server(base_url: str) -> dict[str, Any]:
    """server.address and server.port of the model server (never its credentials or query)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return {}
    return {"server.address": parts.hostname, "server.port": port} if parts.hostname else {}
