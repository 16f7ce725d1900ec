"""The SDK's providers with OTLP/HTTP exporters, configured by the standard OTEL_* variables.

The exporters read OTEL_EXPORTER_OTLP_(TRACES_|METRICS_)ENDPOINT, _HEADERS, _TIMEOUT and the rest
from the environment themselves (default http://localhost:4318); OTEL_SERVICE_NAME and
OTEL_RESOURCE_ATTRIBUTES name the service; OTEL_TRACES_EXPORTER=none / OTEL_METRICS_EXPORTER=none
leave one of them out. Spans are batched (a run pays no request per span) and flushed at each run's end.
"""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider


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

    tracer_provider = TracerProvider(resource=resource(environ))
    if environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() != "none":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(**bounded(environ, "TRACES"))))
    readers = []
    if environ.get("OTEL_METRICS_EXPORTER", "otlp").strip().lower() != "none":
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter(**bounded(environ, "METRICS"))))
    return tracer_provider, MeterProvider(resource=resource(environ), metric_readers=readers)
