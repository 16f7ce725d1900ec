"""Prompt tokens of a 30-turn session: naive (full history every request) against the context window.

The session is a deterministic fixture shaped like real repair work: a 600-line module read four
times (twice whole, twice in part), three test runs of 400 output lines each, edits, greps and small
reads. Each of the 30 requests is planned from the history so far, as the loop does; a compaction
asks a ScriptedModel that answers with a fixed 250-word summary. Token counts use
loopagent.context's estimator for both sides, so the ratio is like for like.

    python bench/bench_context.py [--quick] [--ctx-size N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loopagent.context import Compaction, ContextWindow, messages_tokens, tools_tokens  # noqa: E402
from loopagent.messages import (  # noqa: E402
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from loopagent.prompt import system_prompt  # noqa: E402
from loopagent.scripted import ScriptedModel  # noqa: E402
from loopagent.tools import Registry, default_tools  # noqa: E402

MODULE = "src/ledger.py"


def module_lines(version: int) -> list[str]:
    """A 600-line module; `version` changes a few lines, as edits would."""
    lines = []
    for i in range(600):
        if i % 12 == 0:
            lines.append(f"def entry_{i // 12}(ledger, amount, *, currency='EUR'):")
        elif i % 12 == 11:
            lines.append("")
        else:
            lines.append(f"    t{i} = ledger.get({i % 7}) * {i % 9}  # v{version}" if i % 3 else f"    if t{i - 1} > 0:")
    return lines


def numbered(lines: list[str], offset: int = 0) -> str:
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start=offset + 1))


def test_output(run: int) -> str:
    """400 lines of `pytest -v` output; fewer failures on each run."""
    failing = {0: 9, 1: 3, 2: 0}[run]
    out = ["============================= test session starts ==============================",
           "platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0", "collected 396 items", ""]
    for i in range(392):
        verdict = "FAILED" if i < failing else "PASSED"
        out.append(f"tests/test_ledger.py::test_entry_{i:03d} {verdict} [{(i + 1) * 100 // 392:3d}%]")
    out += ["", f"======= {failing} failed, {392 - failing} passed in {3.1 + run:.2f}s ======="]
    return "exit code {}\n{}".format(1 if failing else 0, "\n".join(out))


def session() -> list[tuple[str, dict, str]]:
    """The 30 turns: (tool, arguments, result content)."""
    v = 0
    read_all = ("read_file", {"path": MODULE})
    pytest = ("shell", {"command": "python -m pytest -v tests/test_ledger.py"})
    turns: list[tuple[str, dict, str]] = [
        ("list_files", {"path": "."}, "README.md\nsrc/ledger.py\nsrc/rates.py\ntests/test_ledger.py\npyproject.toml"),
        ("read_file", {"path": "README.md"}, numbered([f"Ledger tools, section {i}." for i in range(40)])),
        (*pytest, test_output(0)),
        (*read_all, numbered(module_lines(v))),
        ("grep", {"pattern": "def entry_"}, "\n".join(f"src/ledger.py:{i * 12 + 1}:def entry_{i}(" for i in range(50))),
        ("read_file", {"path": "src/rates.py"}, numbered([f"RATE_{i} = {i / 100:.2f}" for i in range(120)])),
    ]
    for k in range(4):
        v += 1
        turns.append(("edit_file", {"path": MODULE, "old_string": f"# v{v - 1}", "new_string": f"# v{v}"},
                      f"edited {MODULE}\n--- a/{MODULE}\n+++ b/{MODULE}\n@@ -{k * 40 + 2},3 +{k * 40 + 2},3 @@\n"
                      + "\n".join(f"-    total_{k * 40 + j} = old  # v{v - 1}\n+    total_{k * 40 + j} = new  # v{v}"
                                  for j in range(3))))
    turns += [
        (*read_all, numbered(module_lines(v))),
        (*pytest, test_output(1)),
        ("read_file", {"path": MODULE, "offset": 200, "limit": 150}, numbered(module_lines(v)[200:350], 200)),
        ("grep", {"pattern": "currency"}, "\n".join(f"src/ledger.py:{i * 12 + 1}: currency" for i in range(50))),
    ]
    for k in range(4, 8):
        v += 1
        turns.append(("edit_file", {"path": MODULE, "old_string": f"# v{v - 1}", "new_string": f"# v{v}"},
                      f"edited {MODULE}\n@@ -{k * 40 + 2},2 +{k * 40 + 2},2 @@\n-    old  # v{v - 1}\n+    new  # v{v}"))
    turns += [
        ("read_file", {"path": MODULE, "offset": 400, "limit": 200}, numbered(module_lines(v)[400:600], 400)),
        ("read_file", {"path": "tests/test_ledger.py"}, numbered([f"def test_entry_{i:03d}(): assert entry({i})"
                                                                  for i in range(150)])),
        ("edit_file", {"path": "tests/test_ledger.py", "old_string": "entry(7)", "new_string": "entry(7.0)"},
         "edited tests/test_ledger.py\n-assert entry(7)\n+assert entry(7.0)"),
        (*read_all, numbered(module_lines(v))),
        ("grep", {"pattern": "round\\("}, "\n".join(f"src/ledger.py:{i * 12 + 5}: round(total, 2)" for i in range(30))),
        ("read_file", {"path": "src/rates.py", "offset": 0, "limit": 40}, numbered([f"RATE_{i} = {i / 100:.2f}"
                                                                                    for i in range(40)])),
        ("edit_file", {"path": "src/rates.py", "old_string": "RATE_7 = 0.07", "new_string": "RATE_7 = 0.070"},
         "edited src/rates.py\n-RATE_7 = 0.07\n+RATE_7 = 0.070"),
        (*pytest, test_output(2)),
        ("shell", {"command": "git diff --stat"}, "exit code 0\n src/ledger.py | 16 ++++----\n 1 file changed"),
        ("grep", {"pattern": "TODO"}, "no matches"),
        ("list_files", {"path": "tests"}, "tests/test_ledger.py\ntests/conftest.py"),
    ]
    assert len(turns) == 29, len(turns)  # + the final answer = 30 requests
    return turns


SUMMARY = " ".join(["Read src/ledger.py (600 lines); edited currency rounding; tests now fewer failures."] * 20)


def summarizer() -> ScriptedModel:
    """Stands in for the model during compaction: a fixed summary, with usage like a server's."""
    return ScriptedModel(itertools.repeat(lambda messages: AssistantMessage(
        text=SUMMARY, usage=Usage(messages_tokens(messages), 300))), record=False)


def replay(ctx_size: int) -> dict:
    """Plan each of the 30 requests, running a compaction where one is needed (the loop's steps without
    its threads and events); tokens of naive and managed requests."""
    tools = Registry(default_tools()).specs()
    fixed = tools_tokens(tools)
    history: list[Message] = [SystemMessage(system_prompt([t.name for t in tools])),
                              UserMessage("Fix the currency rounding bug in src/ledger.py; the ledger tests fail.")]
    window, model = ContextWindow(ctx_size=ctx_size, reserve=4096), summarizer()
    naive, ours, spent = [], [], 0
    started = time.perf_counter()
    turns = session()
    for n in range(len(turns) + 1):
        request = window.plan(history, tools)
        if isinstance(request, Compaction):
            summary = model.complete(request.messages, [], lambda event: None)
            spent += window.compacted(history, request, summary).usage.prompt_tokens
            request = window.plan(history, tools, compacted=True)
        naive.append(messages_tokens(history) + fixed)
        ours.append(request.tokens)
        if n == len(turns):
            break
        name, args, content = turns[n]
        call = ToolCall(f"call_{n}", name, json.dumps(args))
        history.append(AssistantMessage(text="", tool_calls=(call,), stop_reason="tool_calls"))
        history.append(ToolResult(call.id, name, content))
    seconds = time.perf_counter() - started
    return {"naive": naive, "ours": ours, "compaction": spent, "compactions": model.served,
            "limit": window.limit, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repetition instead of five")
    parser.add_argument("--ctx-size", type=int, default=16384)
    opts = parser.parse_args()
    runs = [replay(opts.ctx_size) for _ in range(1 if opts.quick else 5)]
    r = runs[0]  # the token counts are deterministic; only the time varies
    naive_total, ours_total = sum(r["naive"]), sum(r["ours"]) + r["compaction"]
    over_naive = sum(t > r["limit"] for t in r["naive"])
    over_ours = sum(t > r["limit"] for t in r["ours"])
    ms = statistics.median(x["seconds"] for x in runs) * 1000
    print(f"30 requests, ctx_size {opts.ctx_size}, prompt limit {r['limit']} tokens (estimated)\n")
    print(f"{'':34}{'naive':>12}{'context window':>16}{'ratio':>8}")
    print(f"{'total prompt tokens':34}{naive_total:>12,}{ours_total:>16,}{ours_total / naive_total:>8.2f}")
    print(f"{'  of which compaction requests':34}{0:>12,}{r['compaction']:>16,}")
    print(f"{'largest request':34}{max(r['naive']):>12,}{max(r['ours']):>16,}")
    print(f"{'requests over the limit':34}{over_naive:>12}{over_ours:>16}")
    print(f"{'compactions':34}{0:>12}{r['compactions']:>16}")
    print(f"{'median time to prepare 30 requests':34}{'':>12}{ms:>14.1f}ms")
    print(f"\nsaved: {1 - ours_total / naive_total:.0%} of prompt tokens")


if __name__ == "__main__":
    main()
