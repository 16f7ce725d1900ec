"""The SDK's providers with OTLP/HTTP exporters, configured by the standard OTEL_* variables.

The exporters read OTEL_EXPORTER_OTLP_(TRACES_|METRICS_)ENDPOINT, _HEADERS, _TIMEOUT and the rest
from the environment themselves (default http://localhost:4318); OTEL_SERVICE_NAME and
OTEL_RESOURCE_ATTRIBUTES name the service; OTEL_TRACES_EXPORTER=none / OTEL_METRICS_EXPORTER=none
leave one of them out. Spans are batched (a run pays no request per span) and flushed at each run's end.
A collector that cannot be reached costs one export's timeout, not one per export: after the first
failure the process sends nothing more (the SDK's own log lines say what failed).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult


class SpanExporter(OTLPSpanExporter):
    """OTLP/HTTP spans until the first export fails (`down`, shared with the metrics)."""

    def __init__(self, down: threading.Event, **kwargs) -> None:
        super().__init__(**kwargs)
        self.down = down

    def export(self, spans):
        if self.down.is_set():
            return SpanExportResult.FAILURE
        result = super().export(spans)
        if result is not SpanExportResult.SUCCESS:
            self.down.set()
        return result


class MetricExporter(OTLPMetricExporter):
    """OTLP/HTTP metrics until the first export fails (`down`, shared with the spans)."""

    def __init__(self, down: threading.Event, **kwargs) -> None:
        super().__init__(**kwargs)
        self.down = down

    def export(self, metrics_data, timeout_millis: float | None = 10000, **kwargs):
        if self.down.is_set():
            return MetricExportResult.FAILURE
        result = super().export(metrics_data, timeout_millis, **kwargs)
        if result is not MetricExportResult.SUCCESS:
            self.down.set()
        return result


def resource(environ: Mapping[str, str]) -> Resource:
    """service.name "loop" (unless OTEL_SERVICE_NAME says otherwise) and loop's version."""
    from loopagent import __version__

    base = {"service.name": environ.get("OTEL_SERVICE_NAME") or "loop", "service.version": __version__}
    return Resource.create(base)


def bounded(environ: Mapping[str, str], signal: str) -> dict[str, float]:
    """The exporter's timeout: the OTEL_* variable when set, else 2 s rather than the SDK's 10, so a collector
    that is down delays the end of a run by seconds, not half a minute of retries."""
    if environ.get("OTEL_EXPORTER_OTLP_TIMEOUT") or environ.get(f"OTEL_EXPORTER_OTLP_{signal}_TIMEOUT"):
        return {}
    return {"timeout": 2.0}


def otlp_providers(environ: Mapping[str, str]) -> tuple[TracerProvider, MeterProvider]:
    """A tracer provider and a meter provider exporting over OTLP/HTTP (not installed as the global ones)."""
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    down = threading.Event()
    tracer_provider = TracerProvider(resource=resource(environ))
    if environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() != "none":
        tracer_provider.add_span_processor(BatchSpanProcessor(SpanExporter(down, **bounded(environ, "TRACES"))))
    readers = []
    if environ.get("OTEL_METRICS_EXPORTER", "otlp").strip().lower() != "none":
        readers.append(PeriodicExportingMetricReader(MetricExporter(down, **bounded(environ, "METRICS"))))
    return tracer_provider, MeterProvider(resource=resource(environ), metric_readers=readers)
