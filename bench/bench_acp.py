"""`loop acp`: time to the first answer text, and session/load of a 10,000-message session.

First text (aim: within +30 ms of the one-shot run): the same text turn against the same fake server,
(a) as a one-shot `loop agent "TASK"` from spawn to the first bytes of the answer on its stdout (the
baseline), (b) through `loop acp` from spawn through initialize, session/new and session/prompt to the
first `agent_message_chunk`, and (c) a second prompt in that open session (an editor's every turn).

session/load (aim: under 2 s): a saved session of 10,000 messages (read_file calls and their results)
loaded through `loop acp`, from the request to its answer, which follows the last replayed update;
baseline: loading the same file (session.load) in this process.

    python bench/bench_acp.py [--quick]          # --quick: fewer repetitions, a 2,000-message session
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from loopagent.messages import AssistantMessage, ToolCall, ToolResult, UserMessage, to_record  # noqa: E402
from loopagent.session import header, load  # noqa: E402
from loopagent.session.catalog import sessions_dir  # noqa: E402
from loopagent.session.writer import encode  # noqa: E402
from tests.fakeserver import FakeServer, text  # noqa: E402

ANSWER = "The answer is forty-two."
BODY = "def handler(event):\n    return event['value'] * 2\n" * 20


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOP_", "OPENAI_"))}
    return {**env, "LOOP_HOME": str(home), "NO_COLOR": "1"}


def one_shot(server: FakeServer, ws: Path, home: Path) -> float:
    """Spawn to the answer's first bytes on stdout."""
    server.add(text(ANSWER))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "loopagent", "agent", "-C", str(ws), "--base-url", server.url,
                             "--ctx-size", "16384", "say it"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env=env_for(home))
    seen = b""
    while ANSWER[:7].encode() not in seen:
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            raise RuntimeError("loop agent ended without the answer")
        seen += chunk
    took = time.perf_counter() - t0
    proc.communicate(timeout=60)
    return took


class Acp:
    """`loop acp` on raw pipes: JSON lines out, JSON lines in."""

    def __init__(self, server: FakeServer, home: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "loopagent", "acp", "--base-url", server.url,
                                      "--ctx-size", "16384"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env_for(home))
        self.next_id = 0

    def send(self, method: str, params: dict) -> int:
        self.next_id += 1
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                           "params": params}) + "\n").encode())
        self.proc.stdin.flush()
        return self.next_id

    def until(self, done) -> dict:
        while line := self.proc.stdout.readline():
            message = json.loads(line)
            if done(message):
                return message
        raise RuntimeError("loop acp ended early")

    def call(self, method: str, params: dict) -> dict:
        sent = self.send(method, params)
        return self.until(lambda m: m.get("id") == sent and "method" not in m)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


def first_chunk(m: dict) -> bool:
    return m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"


def acp_turns(server: FakeServer, ws: Path, home: Path) -> tuple[float, float]:
    """(spawn to first chunk, a second prompt to its first chunk)."""
    server.add(text(ANSWER), text(ANSWER))
    t0 = time.perf_counter()
    acp = Acp(server, home)
    acp.call("initialize", {"protocolVersion": 1})
    sid = acp.call("session/new", {"cwd": str(ws), "mcpServers": []})["result"]["sessionId"]
    acp.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "say it"}]})
    acp.until(first_chunk)
    cold = time.perf_counter() - t0
    acp.until(lambda m: "result" in m and "stopReason" in m["result"])
    t1 = time.perf_counter()
    acp.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "again"}]})
    acp.until(first_chunk)
    warm = time.perf_counter() - t1
    acp.until(lambda m: "result" in m and "stopReason" in m["result"])
    acp.close()
    return cold, warm


def saved_session(home: Path, ws: Path, n: int) -> Path:
    """A session of `n` messages in `ws`'s session directory, written in bulk (the bytes the writer writes)."""
    directory = sessions_dir(home, ws)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "20260101T000000Z-bench.jsonl"
    lines = [encode(header(path.stem, ws, "default", "http://127.0.0.1:8080/v1", "bench"))]
    for i in range(n):
        if i % 4 == 0:
            message = UserMessage(f"look at module {i}")
        elif i % 4 == 1:
            message = AssistantMessage(tool_calls=(ToolCall(f"c{i}", "read_file", json.dumps({"path": f"m{i}.py"})),),
                                       stop_reason="tool_calls")
        elif i % 4 == 2:
            message = ToolResult(f"c{i - 1}", "read_file", BODY)
        else:
            message = AssistantMessage(text=f"module {i} doubles its value")
        lines.append(encode({"type": "message", "index": i, **to_record(message)}))
    path.write_bytes(b"".join(lines))
    return path


def acp_load(server: FakeServer, ws: Path, home: Path, sid: str) -> tuple[float, int]:
    """session/load to its answer (after the last replayed update); and how many updates came."""
    acp = Acp(server, home)
    acp.call("initialize", {"protocolVersion": 1})
    count = 0

    def answered(m: dict) -> bool:
        nonlocal count
        count += m.get("method") == "session/update"
        return m.get("id") == sent and "method" not in m

    t0 = time.perf_counter()
    sent = acp.send("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
    reply = acp.until(answered)
    took = time.perf_counter() - t0
    acp.close()
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return took, count


def row(name: str, values: list[float], base: float) -> str:
    med = statistics.median(values)
    return f"| {name} | {med * 1000:8.1f} ms | {med / base:5.2f}x | {(med - base) * 1000:+7.1f} ms |"


def main() -> None:
    quick = "--quick" in sys.argv
    reps = 3 if quick else 7
    n = 2_000 if quick else 10_000
    with tempfile.TemporaryDirectory() as tmp, FakeServer() as server:
        ws, home = Path(tmp) / "ws", Path(tmp) / "home"
        ws.mkdir()
        (ws / "a.txt").write_text("hello\n")
        shots, colds, warms = [], [], []
        for _ in range(reps):  # interleaved, so load on the machine falls on both alike
            shots.append(one_shot(server, ws, home))
            cold, warm = acp_turns(server, ws, home)
            colds.append(cold)
            warms.append(warm)
        base = statistics.median(shots)
        print("First answer text (median of", reps, "runs)\n")
        print("| run | median | ratio | vs one-shot |\n|---|---|---|---|")
        print(row("one-shot `loop agent` (baseline)", shots, base))
        print(row("`loop acp`: spawn, initialize, new, prompt", colds, base))
        print(row("`loop acp`: a prompt in an open session", warms, base))

        path = saved_session(home, ws, n)
        loads, parse = [], []
        for _ in range(max(2, reps // 2)):
            t0 = time.perf_counter()
            load(path)
            parse.append(time.perf_counter() - t0)
            took, count = acp_load(server, ws, home, path.stem)
            loads.append(took)
        base = statistics.median(parse)
        print(f"\nsession/load of {n:,} messages ({count:,} updates replayed)\n")
        print("| step | median | ratio | vs load() |\n|---|---|---|---|")
        print(row("session.load() in process (baseline)", parse, base))
        print(row("`loop acp` session/load to its answer", loads, base))


if __name__ == "__main__":
    main()
