"""Harness cost per turn over a long session in which every turn is a `read_file` of a small file
(three files in turn).

Two models: an instant fake server (real HTTP, real SSE), and the package's ScriptedModel that
encodes the full request body exactly as the HTTP client does before it answers. The CPU
time of the process per turn (the model stream runs in a worker thread since Ctrl+C became a
cancel token; with real HTTP the in-process fake server's own work is included) (request encoding, stream assembly, validation, tool,
listeners, context window) grows only until the request fills --ctx-size (16384, the default,
reached near turn 100) and is flat from there to turn 1,000: nothing per turn rescans or
re-encodes the whole history.

    python bench/bench_loop.py [--quick]
"""

from __future__ import annotations

import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loopagent.cancel import Cancel  # noqa: E402
from loopagent.client.openai import OpenAIClient, WireEncoder  # noqa: E402
from loopagent.events import TurnStart  # noqa: E402
from loopagent.loop import Agent, Limits  # noqa: E402
from loopagent.messages import SystemMessage, UserMessage  # noqa: E402
from loopagent.scripted import ScriptedModel, call, calls  # noqa: E402
from loopagent.tools import Registry, ToolContext, default_tools  # noqa: E402
from loopagent.tools.workspace import Workspace  # noqa: E402
from tests.fakeserver import FakeServer, Reply, text_events, tool_events  # noqa: E402

# Three files read in turn: the same call with the same result in a row would be a loop.
EVENTS = [tool_events(("read_file", {"path": f"small{i}.py"})) for i in range(3)]


def in_process_model() -> ScriptedModel:
    """The package's ScriptedModel, encoding every request like the HTTP client before it answers."""
    encoder = WireEncoder()
    turns = [calls(call("read_file", {"path": f"small{i}.py"}, id=f"call_{i}")) for i in range(3)]
    return ScriptedModel(itertools.cycle(turns), summary=SUMMARY_TEXT, record=False,
                         on_request=lambda messages, tools: encoder.encode("bench", messages, tools, 4096))


SUMMARY_TEXT = "Read small0.py, small1.py and small2.py repeatedly; nothing changed. Next: stop."
SUMMARY = text_events(SUMMARY_TEXT)


def reply_to(body: dict, k: int) -> Reply:
    return Reply(events=SUMMARY if "tools" not in body else EVENTS[k % 3])


def per_turn_cpu(model, ws: Path, turns: int) -> list[float]:
    stamps: list[float] = []
    agent = Agent(
        model=model, registry=Registry(default_tools()), tools=ToolContext(Workspace(ws)),
        listeners=(lambda e: stamps.append(time.process_time()) if isinstance(e, TurnStart) else None,),
        limits=Limits(max_steps=turns),
    )
    agent.run([SystemMessage("bench"), UserMessage("read small.py forever")], "", Cancel())
    return [b - a for a, b in zip(stamps, stamps[1:], strict=False)]


def around(values: list[float], mark: int) -> float:
    return statistics.median(values[max(0, mark - 6): mark + 3]) * 1000


def main() -> None:
    turns = 200 if "--quick" in sys.argv else 1000
    marks = [m for m in (10, 100) if m < turns - 10] + [turns - 5]
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        for i in range(3):
            (ws / f"small{i}.py").write_text("".join(f"line {n} of {i}\n" for n in range(20)))
        local = per_turn_cpu(in_process_model(), ws, turns)
        with FakeServer() as server:
            server.add(*(lambda body, k=k: reply_to(body, k) for k in range(2 * turns)))
            client = OpenAIClient(base_url=server.url, model="bench")
            http = per_turn_cpu(client, ws, turns)
            client.close()
    print("| turn | harness CPU ms/turn (in-process model) | ratio | with real HTTP ms/turn | ratio |")
    print("|---:|---:|---:|---:|---:|")
    for m in marks:
        a, b = around(local, m), around(http, m)
        print(f"| {m} | {a:.2f} | {a / around(local, marks[0]):.2f}x | {b:.2f} | {b / around(http, marks[0]):.2f}x |")


if __name__ == "__main__":
    main()
