"""What delegation costs and saves: `task` children through a real run (open_run) against the fake server.

1. Overhead of a `task` call beyond its model requests (child set-up and tear-down: its session file,
   registry, policy, client, system prompt): the task call's wall time minus its child's model requests,
   each priced at the median time of the parent's own requests in the same run (the baseline).
2. Two read-only children whose model answers take 1 s each, in one reply: the turn against one child.
3. Prompt tokens of a 30-read exploration done by the parent alone vs delegated to an explore child: the
   parent's context at its final request (estimated as the context window counts it), as a ratio.

    python bench/bench_plan.py [--quick]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loopagent.cancel import Cancel  # noqa: E402
from loopagent.context import estimate_tokens  # noqa: E402
from loopagent.events import AssistantDone, ToolFinished, ToolStarted, TurnStart  # noqa: E402
from loopagent.run.build import Host  # noqa: E402
from loopagent.run.run import open_run  # noqa: E402
from loopagent.run.spec import Flags, RunSpec  # noqa: E402
from tests.fakeserver import FakeServer, Reply, text, text_events, tools  # noqa: E402

CHILD = "# Child agent"


def is_child(body: dict) -> bool:
    return CHILD in body["messages"][0]["content"]


def run_once(server: FakeServer, ws: Path, home: Path) -> dict[str, list[float]]:
    """One headless run; the parent's request times and each task call's wall time (seconds)."""
    marks: dict[str, list[float]] = {"requests": [], "tasks": []}
    opened: dict[str, float] = {}

    def listen(event) -> None:
        now = time.perf_counter()
        if isinstance(event, TurnStart):
            opened["request"] = now
        elif isinstance(event, AssistantDone) and "request" in opened:
            marks["requests"].append(now - opened.pop("request"))
        elif isinstance(event, ToolStarted) and event.call.name == "task":
            opened[event.call.id] = now
        elif isinstance(event, ToolFinished) and event.call.id in opened:
            marks["tasks"].append(now - opened.pop(event.call.id))

    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOP_", "OPENAI_"))}
    host = Host(env={**env, "LOOP_HOME": str(home)}, home=home, cwd=ws, out=open(os.devnull, "w"),
                err=open(os.devnull, "w"))
    spec = RunSpec("explore", ws, Flags(base_url=server.url, approval="all", ctx_size=65536, checkpoints=False,
                                        max_steps=200), json=True)
    with open_run(spec, host, [listen]) as run:
        run.turn(None, Cancel())
    return marks


def respond(parent: list[Reply], child):
    script = iter(parent)
    return lambda body: child(body) if is_child(body) else next(script)


def overhead(ws: Path, home: Path, runs: int) -> tuple[float, float]:
    """(median task overhead ms, median parent request ms)."""
    found, base = [], []
    for _ in range(runs):
        with FakeServer() as server:
            server.respond = respond([tools(("list_files", {})), tools(("task", {"description": "d", "prompt": "p"})),
                                      text("ok")],
                                     lambda body: text("child answer"))
            marks = run_once(server, ws, home)
            # the parent's own requests (instant replies) price the child's one request
            request = statistics.median(marks["requests"])
            found += [t - request for t in marks["tasks"]]
            base.append(request)
    return statistics.median(found) * 1000, statistics.median(base) * 1000


def parallel(ws: Path, home: Path, children: int) -> float:
    """Seconds of the task calls of one reply with `children` read-only children answering after 1 s."""
    calls = [("task", {"description": f"look {n}", "prompt": f"look {n}"}) for n in range(children)]
    slow = Reply(events=text_events("found it"), delay=1.0)
    with FakeServer() as server:
        server.respond = respond([tools(*calls), text("ok")], lambda body: slow)
        start = time.perf_counter()
        run_once(server, ws, home)
        return time.perf_counter() - start


def context_tokens(body: dict) -> int:
    return sum(estimate_tokens(m.get("content") or "") + estimate_tokens(json.dumps(m.get("tool_calls", [])))
               for m in body["messages"])


def exploration(ws: Path, home: Path, delegate: bool) -> int:
    """The parent's context (estimated tokens) at its final request after 30 reads, alone or by a child."""
    reads = [tools(("read_file", {"path": f"f{k % 10}.py", "offset": k})) for k in range(30)]
    answer = text("The ledger code lives in f0.py-f9.py; balances are computed line by line.")
    with FakeServer() as server:
        if delegate:
            child = iter([*reads, answer])
            server.respond = respond([tools(("task", {"description": "explore", "prompt": "map the code"})),
                                      text("done")], lambda body: next(child))
        else:
            server.add(*reads, text("done"))
        run_once(server, ws, home)
        return context_tokens([b for b in server.requests if not is_child(b)][-1])


def main() -> None:
    quick = "--quick" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        ws, home = Path(tmp) / "ws", Path(tmp) / "home"
        ws.mkdir()
        for k in range(10):
            (ws / f"f{k}.py").write_text("".join(f"balance_{k}_{n} = compute({n}) * {k}  # ledger\n" for n in range(60)))
        task_ms, request_ms = overhead(ws, home, 3 if quick else 10)
        one = statistics.median(parallel(ws, home, 1) for _ in range(1 if quick else 3))
        two = statistics.median(parallel(ws, home, 2) for _ in range(1 if quick else 3))
        alone, delegated = exploration(ws, home, False), exploration(ws, home, True)
    print("| measure | value | baseline | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| task overhead beyond its model request (ms) | {task_ms:.1f} | parent request {request_ms:.1f} ms "
          f"| {task_ms / request_ms:.2f}x |")
    print(f"| run with 2 read-only children, 1 s answers (s) | {two:.2f} | 1 child {one:.2f} s | {two / one:.2f}x |")
    print(f"| parent context after a 30-read exploration (tokens) | delegated {delegated} | alone {alone} "
          f"| {delegated / alone:.2f}x |")


if __name__ == "__main__":
    main()
