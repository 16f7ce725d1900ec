"""Output for programs: what telemetry costs a turn, and what `loop review` sends for a large diff.

1. Harness CPU per turn over a session of `read_file` turns (the package's ScriptedModel, encoding
   each request like the HTTP client), with telemetry off (the baseline), on with the SDK's in-memory
   exporter and metric reader, and on with the real OTLP/HTTP exporters (batched, as a run sets them
   up) to a receiver on 127.0.0.1. CPU is the whole process's (the exporters' threads included).
2. `loop review --commit HEAD` of a 20-line and of a 2,000-line diff in a real git repository against the
   fake server: bytes of the first request, whether the diff was clipped, and the time from the call to
   the first request (git, the run's set-up, discovery), medians of a few runs.

    python bench/bench_output.py [--quick]
"""

from __future__ import annotations

import io
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loopagent.cancel import Cancel  # noqa: E402
from loopagent.client.openai import WireEncoder  # noqa: E402
from loopagent.events import TurnStart  # noqa: E402
from loopagent.loop import Agent, Limits  # noqa: E402
from loopagent.messages import SystemMessage, UserMessage  # noqa: E402
from loopagent.scripted import ScriptedModel, call, calls  # noqa: E402
from loopagent.telemetry import Facts  # noqa: E402
from loopagent.tools import Registry, ToolContext, default_tools  # noqa: E402
from loopagent.tools.workspace import Workspace  # noqa: E402
from tests.fakeserver import FakeServer, text  # noqa: E402


class Sink(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver that takes each body and answers 200."""

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


def model() -> ScriptedModel:
    encoder = WireEncoder()
    turns = [calls(call("read_file", {"path": f"small{i}.py"}, id=f"call_{i}")) for i in range(3)]
    return ScriptedModel(itertools.cycle(turns), summary="read them", record=False,
                         on_request=lambda messages, tools: encoder.encode("bench", messages, tools, 4096))


def per_turn_cpu(ws: Path, turns: int, telemetry: tuple = ()) -> float:
    """Median CPU ms between two turns' starts, after the first 10 (warm-up); the lower of two sessions."""
    return min(session_cpu(ws, turns, telemetry) for _ in range(2))


def session_cpu(ws: Path, turns: int, telemetry: tuple) -> float:
    stamps: list[float] = []
    agent = Agent(model=model(), registry=Registry(default_tools()), tools=ToolContext(Workspace(ws)),
                  listeners=(*telemetry, lambda e: stamps.append(time.process_time()) if isinstance(e, TurnStart)
                             else None), limits=Limits(max_steps=turns))
    agent.run([SystemMessage("bench"), UserMessage("read small.py forever")], "read", Cancel())
    return statistics.median([b - a for a, b in zip(stamps[10:], stamps[11:], strict=False)]) * 1000


def in_memory() -> tuple:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from loopagent.telemetry.spans import GenAITelemetry

    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    return (GenAITelemetry(tracer, MeterProvider(metric_readers=[InMemoryMetricReader()]), Facts("bench")),)


def otlp(url: str) -> tuple:
    from loopagent.telemetry.export import otlp_providers
    from loopagent.telemetry.spans import GenAITelemetry

    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = url
    tracer, meter = otlp_providers(os.environ)
    return (GenAITelemetry(tracer, meter, Facts("bench"), flush=True),)


def telemetry_table(turns: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        for i in range(3):
            (ws / f"small{i}.py").write_text("".join(f"line {n} of {i}\n" for n in range(20)))
        sink = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
        threading.Thread(target=sink.serve_forever, daemon=True).start()
        exporting = otlp(f"http://127.0.0.1:{sink.server_port}")
        rows = [("off", per_turn_cpu(ws, turns)), ("in-memory exporter", per_turn_cpu(ws, turns, in_memory())),
                ("OTLP/HTTP to 127.0.0.1", per_turn_cpu(ws, turns, exporting))]
        for provider in exporting[0].providers:
            provider.shutdown()
        del os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"]
        sink.shutdown()
    base = rows[0][1]
    print(f"Telemetry: harness CPU per turn ({turns} turns, median after 10)\n")
    print("| telemetry | CPU ms/turn | added ms/turn | ratio |")
    print("|---|---:|---:|---:|")
    for name, ms in rows:
        print(f"| {name} | {ms:.3f} | {ms - base:+.3f} | {ms / base:.2f}x |")


def repository(root: Path, lines: int) -> Path:
    """A repository whose HEAD commit changes `lines` lines of one file."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b", "GIT_CONFIG_GLOBAL": os.devnull}
    root.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, timeout=60)

    git("init", "-q")
    (root / "big.py").write_text("".join(f"value_{n} = {n}\n" for n in range(lines)))
    git("add", ".")
    git("commit", "-qm", "before")
    (root / "big.py").write_text("".join(f"value_{n} = {n} * 2  # doubled\n" for n in range(lines)))
    git("commit", "-qam", "after")
    return root


def review_once(repo: Path, home: Path) -> tuple[int, float, bool]:
    """(bytes of the first request, seconds to it, clipped) for one `loop review --commit HEAD`."""
    from loopagent.cli.review_cmd import run_review
    from loopagent.run.build import Host
    from loopagent.run.spec import Flags

    first: list[float] = []

    def answer(body: dict):
        first.append(time.perf_counter())
        return text('{"findings": [], "summary": "fine"}')

    with FakeServer(respond=answer) as srv:
        host = Host(env={"PATH": os.environ.get("PATH", "")}, home=home, cwd=repo, out=io.StringIO(),
                    err=io.StringIO())
        start = time.perf_counter()
        run_review(repo, ("commit", "HEAD"), "P1", False, Flags(base_url=srv.url, ctx_size=16384), host)
        body = srv.requests[0]
    import json

    task = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return len(json.dumps(body).encode()), first[0] - start, "clipped" in task


def review_table(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for lines in (20, 2000):
            repo = repository(Path(tmp) / f"r{lines}", lines)
            if lines == 20:
                review_once(repo, Path(tmp) / "home")  # warm-up: the first run pays the imports
            results = [review_once(repo, Path(tmp) / "home") for _ in range(runs)]
            rows.append((lines, results[0][0], statistics.median(r[1] for r in results) * 1000, results[0][2]))
    print(f"\n`loop review --commit HEAD` (--ctx-size 16384; median of {runs} runs)\n")
    print("| diff lines | first request bytes | ratio | diff clipped | ms to first request | ratio |")
    print("|---:|---:|---:|---|---:|---:|")
    for lines, size, ms, clipped in rows:
        print(f"| {lines} | {size} | {size / rows[0][1]:.1f}x | {'yes' if clipped else 'no'} | {ms:.0f} | "
              f"{ms / rows[0][2]:.2f}x |")


def main() -> None:
    quick = "--quick" in sys.argv
    telemetry_table(200 if quick else 1000)
    review_table(3 if quick else 7)


if __name__ == "__main__":
    main()
