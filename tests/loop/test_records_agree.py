"""One feed: the `--json` stream, the session file and the requests the model got agree message by message.

A run with a clip (a result too large for the window), a stub (a superseded read), a repeat warning
(three identical calls), a compaction (a small --ctx-size) and a question nudge (headless): every
tool result and assistant message has the same content in the stream, in the session file, and in
the next request (where the stream's `context_edit` and `compacted` lines say how a request differs
from the stored history).
"""

from __future__ import annotations

import json
from pathlib import Path

from loopagent.context import SUMMARY_HEADER
from loopagent.guards import QUESTION_NUDGE
from tests.conftest import where_shells_run
from tests.context.test_context_e2e import base_tokens, ctx_for, dispatch, write_lines
from tests.fakeserver import FakeServer, text, tools


def conversation_of_stream(lines: list[dict]) -> list[tuple]:
    """The messages a `--json` stream reports, in order (user, assistant, tool)."""
    out: list[tuple] = []
    for e in lines:
        if e["type"] == "user":
            out.append(("user", e["content"]))
        elif e["type"] == "assistant":
            out.append(("assistant", e["text"], [(c["id"], c["name"], c["arguments"]) for c in e["tool_calls"]]))
        elif e["type"] == "tool_result":
            out.append(("tool", e["id"], e["content"], e["is_error"]))
    return out


def conversation_of_session(records: list[dict]) -> list[tuple]:
    """The messages a session file stores, in order, without the system prompt."""
    out: list[tuple] = []
    for r in records:
        if r["type"] != "message" or r["role"] == "system":
            continue
        if r["role"] == "user":
            out.append(("user", r["content"]))
        elif r["role"] == "assistant":
            out.append(("assistant", r["text"], [(c["id"], c["name"], c["arguments"]) for c in r["tool_calls"]]))
        else:
            out.append(("tool", r["call_id"], r["content"], r["is_error"]))
    return out


def wire(message: dict) -> tuple:
    """A message of a request as the server received it, in the shape of the others (no is_error)."""
    if message["role"] == "assistant":
        return ("assistant", message["content"] or "", [(c["id"], c["function"]["name"], c["function"]["arguments"])
                                                        for c in message.get("tool_calls", [])])
    if message["role"] == "tool":
        return ("tool", message["tool_call_id"], message["content"])
    return (message["role"], message["content"])


def expected_requests(system: str, lines: list[dict]) -> list[list[tuple]]:
    """What each answer request must hold, rebuilt from the stream alone: the conversation so far with the
    edits and the compaction announced before it (one request before each `assistant` line)."""
    history: list[tuple] = []
    edits: dict[int, str] = {}
    summary: tuple[str, int] | None = None
    out: list[list[tuple]] = []
    for e in lines:
        if e["type"] == "assistant":
            out.append(view(system, history, edits, summary))
        if e["type"] == "context_edit":
            edits[e["index"] - 1] = e["content"]  # stream indexes count the system prompt
        elif e["type"] == "compacted":
            summary = (e["summary"], e["upto"] - 1)
        for m in conversation_of_stream([e]):
            history.append(m)
    return out


def view(system: str, history: list[tuple], edits: dict[int, str], summary: tuple[str, int] | None) -> list[tuple]:
    sent = [("system", system)]
    start = 0
    if summary is not None:
        text_, start = summary
        sent.append(history[0])
        sent += [m for m in history[1:start] if m[0] == "user" and m[1] != QUESTION_NUDGE]
        sent.append(("user", f"{SUMMARY_HEADER}\n\n{text_}"))
    for i in range(start, len(history)):
        m = history[i]
        sent.append(("tool", m[1], edits.get(i, m[2])) if m[0] == "tool" else m)
    return sent


def test_stream_session_and_requests_agree_through_clip_stub_repeat_compaction_and_nudge(run_loop, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    write_lines(ws / "big.py", 400, "big")
    for k in range(6):
        write_lines(ws / f"f{k}.txt", 40, f"f{k}")
    task = "look at the files"
    limit = base_tokens(run_loop, ws, task) + 1400
    same = ("read_file", {"path": "f0.txt"})
    turns = [tools(("read_file", {"path": "big.py"})), tools(same), tools(same), tools(same),
             *[tools(("read_file", {"path": f"f{k}.txt"})) for k in range(1, 6)],
             text("I read them all. Would you like me to change anything?"), text("Done: nothing to change.")]
    with FakeServer([dispatch(turns)] * (len(turns) + 5)) as server:
        proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                        *where_shells_run(), "--ctx-size", ctx_for(limit), "--no-checkpoints", task)
        requests = server.requests
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 0, proc.stderr
    session = lines[0]
    assert session["type"] == "session" and session["ctx_size"] == int(ctx_for(limit))
    records = [json.loads(line) for line in Path(session["path"]).read_text().splitlines()]
    kinds = [e["type"] for e in lines]
    edits = [e["kind"] for e in lines if e["type"] == "context_edit"]
    assert "compacted" in kinds and "stub" in edits and "clip" in edits
    assert any(e["type"] == "notice" and e["kind"] == "loop" for e in lines)
    assert ("user", QUESTION_NUDGE) in conversation_of_stream(lines)

    # The stream and the session file hold the same conversation, the repeat warning included.
    stream = conversation_of_stream(lines)
    assert stream == conversation_of_session(records)
    warned = [m for m in stream if m[0] == "tool" and "[loop: you have run this three times" in m[2]]
    assert len(warned) == 1
    # ...and each request is that conversation with the announced edits and summary, message by message.
    answers = [r for r in requests if "tools" in r]
    assert len([r for r in requests if "tools" not in r]) >= 1
    assert lines[-1]["usage"]["prompt_tokens"] == 100 * len(requests)  # the summaries' cost is counted too
    system = records[1]["content"]
    expected = expected_requests(system, lines)
    assert len(answers) == len(expected)
    for n, (body, want) in enumerate(zip(answers, expected, strict=True)):
        got = [wire(m) for m in body["messages"]]
        want = [m[:3] if m[0] == "tool" else m for m in want]
        assert got == want, f"request {n}"
