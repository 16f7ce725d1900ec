"""Telemetry: OpenTelemetry's GenAI semantic conventions, from the event stream, over OTLP/HTTP.

Off unless asked: `telemetry: true` in the user file (or LOOP_TELEMETRY), or the standard
OTEL_EXPORTER_OTLP_ENDPOINT in the environment. A project file can neither turn it on nor point it
anywhere (config.py ignores its telemetry keys with a warning; the OTEL_* variables are the user's).
OTEL_SDK_DISABLED=true turns it off. The SDK (`loopagent[otel]`) is imported only when it is on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from loopagent.events import Listener

INSTALL = "pip install 'loopagent[otel]'"


@dataclass(frozen=True)
class Facts:
    """What the spans say about a run that its events do not: the model and server, and which tools run
    sandboxed. `redact` takes every known secret out of text before it becomes an attribute."""

    model: str
    provider: str = "openai"
    base_url: str = ""
    max_tokens: int | None = None
    sandboxed: frozenset[str] = frozenset()  # tools whose work runs inside the sandbox
    content: bool = False  # telemetry_content: prompts, answers and tool text as attributes
    redact: Callable[[str], str] = field(default=lambda text: text)


def wanted(settings: Any, environ: Mapping[str, str]) -> str:
    """Why telemetry is on ('' when off): the user's setting, or the standard endpoint variable."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return ""
    if settings.telemetry:
        return "telemetry: true"
    return "OTEL_EXPORTER_OTLP_ENDPOINT" if environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() else ""


def telemetry_for(settings: Any, environ: Mapping[str, str], sandboxed: frozenset[str],
                  redact: Callable[[str], str], warn: Callable[[str], None]) -> list[Listener]:
    """The run's telemetry listener when it is asked for, exporting over OTLP/HTTP; [] when not (or when the
    SDK is not installed: one warning). `sandboxed`: the tools whose work runs in the sandbox."""
    if not (why := wanted(settings, environ)):
        return []
    facts = Facts(settings.model, settings.provider, settings.base_url, settings.max_tokens, sandboxed,
                  settings.telemetry_content, redact)
    try:
        from loopagent.telemetry.export import otlp_providers
        from loopagent.telemetry.spans import GenAITelemetry
    except ImportError:
        warn(f"telemetry is on ({why}) but OpenTelemetry is not installed: {INSTALL}")
        return []
    tracer_provider, meter_provider = otlp_providers(environ)
    return [GenAITelemetry(tracer_provider, meter_provider, facts, flush=True)]
