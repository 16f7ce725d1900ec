"""Telemetry in-process: a real run (the fake server over real HTTP, the real tools and policy) with the
listener on the SDK's in-memory exporter and metric reader. Spans, parenting and GenAI attributes; no
prompt text and no key without telemetry_content; with it, text only through the redactor."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from loopagent.run.build import Host  # noqa: E402
from loopagent.run.launch import run_agent  # noqa: E402
from loopagent.run.spec import Flags, RunSpec  # noqa: E402
from loopagent.secrets import Redactor  # noqa: E402
from loopagent.telemetry import Facts, wanted  # noqa: E402
from loopagent.telemetry.spans import GenAITelemetry  # noqa: E402
from tests.conftest import where_shells_run  # noqa: E402
from tests.fakeserver import FakeServer, text, tools  # noqa: E402

KEY = "sk-canary-7f3a9e1d2c"
TASK = "PROMPT-CANARY read a.txt"
SECRET_IN_FILE = "FILE-CANARY"


def run(tmp_path: Path, workspace: Path, content: bool) -> tuple[list, list, int]:
    (workspace / "a.txt").write_text(f"hello {KEY} {SECRET_IN_FILE}\n")
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    sandboxed = frozenset() if where_shells_run() else frozenset({"shell"})
    facts = Facts("qwen-test", "openai", "http://user:pw@127.0.0.1:9/v1", 4096, sandboxed, content,
                  Redactor([KEY]).redact)
    listener = GenAITelemetry(tracer_provider, MeterProvider(metric_readers=[reader]), facts)
    script = [tools(("read_file", {"path": "a.txt"}), ("write_file", {"path": "b.txt", "content": "x"}),
                    ("read_file", {"path": "missing.txt"})),
              tools(("shell", {"command": "echo hi"})), text("done, it says hello")]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "LOOP_API_KEY": KEY,
           "LOOP_DENY": '["write_file(*)"]', "LOOP_APPROVAL": "all"}
    host = Host(env=env, home=tmp_path / "home", cwd=workspace, out=io.StringIO(), err=io.StringIO())
    with FakeServer(script) as srv:
        spec = RunSpec(task=TASK, workspace=workspace, json=True,
                       flags=Flags(base_url=srv.url, checkpoints=False, sandbox="off" if where_shells_run() else None))
        code = run_agent(spec, [listener], host)
    return spans.get_finished_spans(), reader.get_metrics_data().resource_metrics, code


def test_a_run_is_one_agent_span_with_chat_and_tool_spans_under_it(tmp_path, workspace):
    spans, metrics, code = run(tmp_path, workspace, content=False)
    assert code == 0
    by_name = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    (agent,) = by_name["invoke_agent loop"]
    assert len(by_name["chat qwen-test"]) == 3
    assert sorted(s.name for s in spans if s.name.startswith("execute_tool")) == [
        "execute_tool read_file", "execute_tool read_file", "execute_tool shell", "execute_tool write_file"]
    assert all(s.parent.span_id == agent.context.span_id for s in spans if s is not agent)
    assert agent.parent is None and len({s.context.trace_id for s in spans}) == 1
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.usage.input_tokens"] == 300 and agent.attributes["loop.status"] == "completed"
    chat = by_name["chat qwen-test"][0]
    assert chat.attributes["gen_ai.request.model"] == "qwen-test" and chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 100 and chat.attributes["gen_ai.usage.output_tokens"] == 10
    answer = by_name["chat qwen-test"][-1]  # streamed text: its first token is seen (tool-call fragments are not)
    assert answer.attributes["loop.time_to_first_token"] >= 0 and answer.attributes["loop.tokens_per_second"] > 0
    assert chat.attributes["server.address"] == "127.0.0.1" and chat.attributes["gen_ai.request.max_tokens"] == 4096
    assert list(by_name["chat qwen-test"][-1].attributes["gen_ai.response.finish_reasons"]) == ["stop"]
    tool = {(s.name, s.attributes["loop.tool.outcome"]): s for s in spans if s.name.startswith("execute_tool")}
    read = tool["execute_tool read_file", "ok"]
    assert read.attributes["loop.policy.decision"] == "allow" and read.attributes["gen_ai.tool.call.id"]
    assert read.attributes["loop.sandboxed"] is False
    assert tool["execute_tool write_file", "denied"].attributes["loop.policy.decision"] == "deny"
    assert tool["execute_tool read_file", "error"].status.status_code.name == "ERROR"
    assert tool["execute_tool shell", "ok"].attributes["loop.sandboxed"] is not where_shells_run()
    names = {m.name: m for rm in metrics for sm in rm.scope_metrics for m in sm.metrics}
    usage = names["gen_ai.client.token.usage"].data.data_points
    assert {p.attributes["gen_ai.token.type"] for p in usage} == {"input", "output"}
    assert sum(p.sum for p in usage if p.attributes["gen_ai.token.type"] == "input") == 300
    assert names["gen_ai.client.operation.duration"].data.data_points[0].count == 3
    everything = json.dumps([s.to_json() for s in spans])
    for canary in (KEY, "PROMPT-CANARY", SECRET_IN_FILE, "hello", "user:pw", "echo hi"):
        assert canary not in everything  # no content, no key, no URL credentials


def test_content_only_when_asked_and_never_the_key(tmp_path, workspace):
    spans, _, _ = run(tmp_path, workspace, content=True)
    everything = json.dumps([s.to_json() for s in spans])
    assert "PROMPT-CANARY" in everything and SECRET_IN_FILE in everything and "echo hi" in everything
    assert KEY not in everything and "[redacted]" in everything


@pytest.mark.parametrize(("setting", "env", "on"), [
    (False, {}, False),
    (True, {}, True),
    (False, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
    (False, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, False),
    (True, {"OTEL_SDK_DISABLED": "true"}, False),
])
def test_off_unless_asked(setting, env, on):
    class Settings:
        telemetry = setting

    assert bool(wanted(Settings, env)) is on


def test_a_failed_request_ends_its_chat_span_and_the_run_in_error(tmp_path, workspace):
    from tests.fakeserver import error

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    listener = GenAITelemetry(tracer_provider, MeterProvider(), Facts("m", redact=Redactor([KEY]).redact))
    host = Host(env={"PATH": os.environ.get("PATH", ""), "LOOP_API_KEY": KEY}, home=tmp_path / "home",
                cwd=workspace, out=io.StringIO(), err=io.StringIO())
    with FakeServer([error(400, f"bad request from key {KEY}")]) as srv:
        code = run_agent(RunSpec(task=TASK, workspace=workspace, json=True, flags=Flags(base_url=srv.url)),
                         [listener], host)
    assert code == 1
    chat, agent = spans.get_finished_spans()
    assert (chat.name, agent.name) == ("chat m", "invoke_agent loop") and chat.parent.span_id == agent.context.span_id
    assert chat.status.status_code.name == "ERROR" and agent.status.status_code.name == "ERROR"
    assert agent.attributes["loop.status"] == "model_error" and "HTTP 400" in agent.status.description
    assert KEY not in json.dumps([s.to_json() for s in (chat, agent)])
