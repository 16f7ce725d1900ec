"""Context discipline end to end: the real CLI against the fake server, asserting on every request body."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

from loopagent.context import SUMMARY_HEADER, estimate_tokens
from loopagent.context.estimate import TOOL_OVERHEAD
from loopagent.guards import QUESTION_NUDGE
from tests.conftest import where_shells_run
from tests.fakeserver import FakeServer, Reply, text, text_events, tools

SUMMARY = "SUMMARY: read the files, nothing changed yet; next check f9."


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def agent(run_loop, server, ws: Path, *extra: str, task: str = "look at the files"):
    return run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all", *where_shells_run(), *extra, task)


def wire_tokens(body: dict) -> int:
    """The estimate the context window uses, computed from a request as the server received it."""
    offered = [t["function"] for t in body.get("tools") or []]
    total = sum(estimate_tokens(json.dumps([f["name"], f["description"], f["parameters"]])) + TOOL_OVERHEAD
                for f in offered)
    for m in body["messages"]:
        total += estimate_tokens(m.get("content") or "") + 4
        total += sum(estimate_tokens(c["function"]["name"]) + estimate_tokens(c["function"]["arguments"]) + 8
                     for c in m.get("tool_calls", []))
        total += 8 if m["role"] == "tool" else 0
    return total


def assert_paired(body: dict) -> None:
    """Every call is answered right after its message, and every result answers a call."""
    pending: list[str] = []
    for m in body["messages"]:
        if m["role"] == "tool":
            assert m["tool_call_id"] in pending, f"result without call: {m['tool_call_id']}"
            pending.remove(m["tool_call_id"])
            continue
        assert not pending, f"calls without results: {pending}"
        pending = [c["id"] for c in m.get("tool_calls", [])]
    assert not pending


def ctx_for(limit: int) -> str:
    """The --ctx-size whose prompt limit is `limit` (the output reserve is min(4096, ctx/2))."""
    return str(2 * limit if limit <= 4096 else limit + 4096)


def dispatch(turns: list[Reply]) -> Callable[[dict], Reply]:
    """One responder for every request: a compaction request (sent without tools) gets the summary."""
    script: Iterator[Reply] = iter(turns)

    def reply(body: dict) -> Reply:
        return text(SUMMARY) if "tools" not in body else next(script)

    return reply


def base_tokens(run_loop, ws: Path, task: str) -> int:
    """Size of the first request (system prompt, tools, task): measured, since prompt and tools evolve."""
    with FakeServer([text("ok")]) as probe:
        assert agent(run_loop, probe, ws, task=task).returncode == 0
        return wire_tokens(probe.requests[0])


def write_lines(path: Path, n: int, tag: str) -> None:
    path.write_text("".join(f"{tag} line {i}: the ledger balance is computed here {i * 7}\n" for i in range(n)))


def test_small_window_never_overflows_and_stays_paired(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    write_lines(ws / "big.py", 120, "big")
    for k in range(6):
        write_lines(ws / f"f{k}.txt", 30, f"f{k}")
    limit = base_tokens(run_loop, ws, "look at the files") + 2500
    echo = "for i in $(seq 1 150); do echo \"test $i of the suite: passed\"; done"
    turns = [tools(("read_file", {"path": "big.py"})), tools(("shell", {"command": echo})),
             tools(("list_files", {})), tools(("shell", {"command": echo}))]
    for k in range(6):
        turns.append(tools(("read_file", {"path": f"f{k}.txt"})))
        if k % 2:
            turns.append(tools(("read_file", {"path": "big.py"})))
    turns += [tools(("edit_file", {"path": "big.py", "old_string": "big line 3:", "new_string": "big line three:"})),
              tools(("shell", {"command": echo})), tools(("read_file", {"path": "big.py", "offset": 10, "limit": 30})),
              text("Done: looked at every file.")]
    server.add(*[dispatch(turns)] * (len(turns) + 5))

    proc = agent(run_loop, server, ws, "--ctx-size", ctx_for(limit))
    out = events(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out[-1]["status"] == "completed" and out[-1]["steps"] == len(turns)
    for body in server.requests:
        assert wire_tokens(body) <= limit
        assert_paired(body)
    sent = [m.get("content") or "" for body in server.requests for m in body["messages"]]
    assert any(c.startswith("[superseded: big.py was read again later") for c in sent)
    assert any(c.startswith("[stale: big.py was changed later by edit_file") for c in sent)
    assert any(c.startswith("[superseded: this command ran again later") for c in sent)
    compactions = [b for b in server.requests if "tools" not in b]
    assert compactions, "the window should have needed a compaction"
    last = server.requests[-1]["messages"]
    assert last[1] == {"role": "user", "content": "look at the files"}
    assert any(m["content"].startswith(SUMMARY_HEADER) and SUMMARY in m["content"] for m in last if m["role"] == "user")
    assert "big line 10:" in last[-1]["content"]  # the latest result is sent whole


def test_superseded_read_becomes_a_stub(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    write_lines(ws / "data.txt", 60, "data")
    with FakeServer([tools(("read_file", {"path": "data.txt"})), text("ok")]) as probe:
        assert agent(run_loop, probe, ws).returncode == 0
        base, one_read = wire_tokens(probe.requests[0]), wire_tokens(probe.requests[1])
    limit = one_read + (one_read - base) // 2  # one read fits, two do not
    read = tools(("read_file", {"path": "data.txt"}))
    server.add(read, read, text("The data file lists 60 balances."))

    proc = agent(run_loop, server, ws, "--ctx-size", ctx_for(limit))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(server.requests) == 3  # no compaction was needed
    results = [m["content"] for m in server.requests[2]["messages"] if m["role"] == "tool"]
    assert results[0] == ("[superseded: data.txt was read again later (call call_0_read_file); "
                          "the newer content is there]")
    assert "data line 0:" in results[1] and "data line 59:" in results[1]
    assert wire_tokens(server.requests[2]) <= limit
    # Before the window was full nothing was stubbed: the prompt prefix stays stable while it can.
    assert "data line 0:" in [m for m in server.requests[1]["messages"] if m["role"] == "tool"][0]["content"]


def test_compaction_request_and_continued_history(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    for k in range(12):
        write_lines(ws / f"f{k}.txt", 12, f"f{k}")  # each result too small to be worth clipping
    task = "Summarise what the twelve files say."
    limit = base_tokens(run_loop, ws, task) + 1600
    turns = [tools(("read_file", {"path": f"f{k}.txt"})) for k in range(12)] + [text("They list balances.")]
    server.add(*[dispatch(turns)] * 20)

    proc = agent(run_loop, server, ws, "--ctx-size", ctx_for(limit), task=task)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kinds = ["compact" if "tools" not in b else "agent" for b in server.requests]
    first = kinds.index("compact")
    ask = server.requests[first]["messages"]
    assert [m["role"] for m in ask] == ["system", "user"]
    assert task in ask[1]["content"] and "f0 line 0:" in ask[1]["content"]
    assert "what remains to do" in ask[1]["content"]
    assert wire_tokens(server.requests[first]) <= limit

    after = server.requests[first + 1]["messages"]
    system = server.requests[0]["messages"][0]
    assert after[0] == system and after[1] == {"role": "user", "content": task}
    assert after[2]["role"] == "user" and after[2]["content"] == f"{SUMMARY_HEADER}\n\n{SUMMARY}"
    assert after[3]["role"] == "assistant" and after[-1]["role"] == "tool"
    assert "f0 line 0:" not in json.dumps(after)  # the oldest turns live only in the summary now
    kept = [m for m in after if m["role"] == "tool"]
    assert kept and all("line 11:" in m["content"] for m in kept)  # recent turns verbatim
    assert_paired(server.requests[first + 1])
    assert kinds.count("agent") == len(turns)


def test_token_budget_stops_before_the_request_that_would_exceed_it(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    write_lines(ws / "big.py", 80, "big")
    script = [tools(("read_file", {"path": "big.py"})), text("done")]
    with FakeServer(script) as probe:  # the fake server reports 100 + 10 tokens per request
        assert agent(run_loop, probe, ws).returncode == 0
        second = wire_tokens(probe.requests[1])
    server.add(*script)
    proc = agent(run_loop, server, ws, "--max-tokens-total", str(110 + second - 1))
    out = events(proc.stdout)
    assert proc.returncode == 3
    assert out[-1]["status"] == "token_limit" and "--max-tokens-total" in out[-1]["message"]
    assert out[-1]["steps"] == 1 and len(server.requests) == 1
    assert out[-1]["usage"] == {"prompt_tokens": 100, "completion_tokens": 10}

    with FakeServer(script) as exact:  # a budget that the second request just fits in
        proc = agent(run_loop, exact, ws, "--max-tokens-total", str(110 + second))
        assert proc.returncode == 0 and len(exact.requests) == 2


def test_loop_detection_nudges_at_three_and_stops_at_five(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("same\n")
    server.add(*[tools(("read_file", {"path": "a.txt"}))] * 5, text("never sent"))
    proc = agent(run_loop, server, ws)
    out = events(proc.stdout)
    assert proc.returncode == 3 and out[-1]["status"] == "loop_detected"
    assert len(server.requests) == 5
    last_result = [body["messages"][-1]["content"] for body in server.requests]
    assert "[loop:" not in "".join(last_result[:3])
    assert last_result[3].endswith("[loop: you have run this three times with the same result; change approach]")
    assert last_result[4].endswith("[loop: you have run this four times with the same result; change approach]")


def test_a_repeated_command_whose_output_changes_is_not_a_loop(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    count = ("shell", {"command": "echo run >> runs.txt && wc -l < runs.txt"})
    server.add(*[tools(count)] * 6, text("Counted six runs."))
    proc = agent(run_loop, server, ws)
    assert proc.returncode == 0, proc.stdout
    assert events(proc.stdout)[-1]["status"] == "completed"
    assert "[loop:" not in json.dumps(server.requests)


def test_question_gets_two_nudges_then_the_run_completes(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    server.add(text("I found the bug. Should I also update the README?"),
               text("The code is fixed. Next I'll run the tests."),
               text("Would you like me to add a changelog entry?"))
    proc = agent(run_loop, server, ws)
    out = events(proc.stdout)
    assert proc.returncode == 0 and out[-1]["status"] == "completed" and out[-1]["steps"] == 3
    assert len(server.requests) == 3
    for body in server.requests[1:]:
        assert body["messages"][-1] == {"role": "user", "content": QUESTION_NUDGE}
    assert sum(m["content"] == QUESTION_NUDGE for m in server.requests[2]["messages"]) == 2


def test_a_plain_answer_gets_no_nudge_and_usage_is_estimated_without_server_counts(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    answer = "Fixed the rounding in ledger.py; all 12 tests pass."
    server.add(Reply(events=text_events(answer, usage=None)))
    proc = agent(run_loop, server, ws)
    out = events(proc.stdout)
    assert proc.returncode == 0 and out[-1]["status"] == "completed" and len(server.requests) == 1
    assert out[-1]["usage"] == {"prompt_tokens": wire_tokens(server.requests[0]),
                                "completion_tokens": estimate_tokens(answer)}
