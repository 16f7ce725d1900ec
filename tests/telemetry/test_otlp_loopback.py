"""Telemetry end to end: `loop agent` exports over OTLP/HTTP to a receiver on 127.0.0.1, which decodes the
protobuf bodies. A project file can neither turn telemetry on nor turn content on."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from tests.conftest import where_shells_run  # noqa: E402
from tests.fakeserver import FakeServer, text, tools  # noqa: E402

KEY = "sk-loopback-canary-41b7"
TASK = "PROMPT-CANARY look at a.txt"


class Receiver:
    """An OTLP/HTTP receiver: keeps each POST's path and raw body."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, bytes]] = []
        received = self.posts

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                received.append((self.path, self.rfile.read(int(self.headers.get("Content-Length") or 0))))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)

    def spans(self) -> list:
        found = []
        for path, body in self.posts:
            if path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(body)
                found += [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
        return found

    def metrics(self) -> set[str]:
        names = set()
        for path, body in self.posts:
            if path == "/v1/metrics":
                request = ExportMetricsServiceRequest.FromString(body)
                names |= {m.name for rm in request.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
        return names


def attributes(span) -> dict:
    return {a.key: _value(a.value) for a in span.attributes}


def _value(value):
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind != "array_value" else [_value(v) for v in value.array_value.values]


def run(run_loop, workspace, srv, env):
    return run_loop("agent", "--json", "-C", str(workspace), "--base-url", srv.url, *where_shells_run(), TASK,
                    env={"LOOP_API_KEY": KEY, **env}, timeout=60)


def test_spans_and_metrics_reach_a_collector_with_no_text_and_no_key(run_loop, workspace):
    (workspace / ".loop").mkdir()
    (workspace / ".loop" / "config.json").write_text('{"telemetry_content": true}')  # ignored: the user's call
    with Receiver() as receiver, FakeServer([tools(("read_file", {"path": "a.txt"})), text("it says hello")]) as srv:
        proc = run(run_loop, workspace, srv, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        assert proc.returncode == 0, proc.stderr
        spans = {s.name: s for s in receiver.spans()}
    assert set(spans) == {"invoke_agent loop", "chat default", "execute_tool read_file"}
    agent = spans["invoke_agent loop"]
    assert not agent.parent_span_id
    assert all(s.parent_span_id == agent.span_id and s.trace_id == agent.trace_id
               for name, s in spans.items() if name != "invoke_agent loop")
    assert attributes(agent)["gen_ai.usage.output_tokens"] == 20
    tool = attributes(spans["execute_tool read_file"])
    assert tool["gen_ai.tool.name"] == "read_file" and tool["loop.tool.outcome"] == "ok"
    assert tool["loop.policy.decision"] == "allow"
    assert {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"} <= receiver.metrics()
    raw = b"".join(body for _, body in receiver.posts)
    for canary in (KEY.encode(), b"PROMPT-CANARY", b"hello", b"a.txt"):
        assert canary not in raw
    assert 'ignored "telemetry_content"' in proc.stderr


def test_a_project_file_cannot_turn_telemetry_on(run_loop, workspace):
    (workspace / ".loop").mkdir()
    (workspace / ".loop" / "config.json").write_text('{"telemetry": true, "telemetry_content": true}')
    with Receiver() as receiver, FakeServer([text("done")]) as srv:
        # where spans would go if it were on (these alone do not turn it on)
        proc = run(run_loop, workspace, srv, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{receiver.url}/v1/traces",
                                              "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": f"{receiver.url}/v1/metrics"})
        assert proc.returncode == 0, proc.stderr
    assert receiver.posts == []
    assert 'ignored "telemetry"' in proc.stderr


def test_after_one_failed_export_nothing_more_is_sent():
    import threading as th

    from opentelemetry.sdk.trace.export import SpanExportResult

    from loopagent.telemetry.export import SpanExporter

    with Receiver() as receiver:
        down = th.Event()
        exporter = SpanExporter(down, endpoint=f"{receiver.url}/v1/traces", timeout=2.0)
        assert exporter.export([]) is SpanExportResult.SUCCESS and len(receiver.posts) == 1
        down.set()  # as a failure sets it, for spans and metrics alike
        assert exporter.export([]) is SpanExportResult.FAILURE and len(receiver.posts) == 1
        port = receiver.httpd.server_address[1]
    gone = th.Event()
    dead = SpanExporter(gone, endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=0.5)
    assert dead.export([]) is SpanExportResult.FAILURE and gone.is_set()  # nothing listens there any more
