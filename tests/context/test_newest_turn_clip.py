"""The newest turn's results are clipped when, and only when, the request would not fit otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopagent.context import (
    Compaction,
    ContextWindow,
    Request,
    check_pairing,
    estimate_tokens,
    messages_tokens,
)
from loopagent.errors import ContextFull
from loopagent.messages import AssistantMessage, SystemMessage, ToolCall, ToolResult, UserMessage
from tests.context.test_context_e2e import (
    agent,
    assert_paired,
    base_tokens,
    ctx_for,
    dispatch,
    events,
    wire_tokens,
    write_lines,
)
from tests.fakeserver import text, tools

MARKER = "clipped to save context; run the tool again to see them"
SYSTEM = SystemMessage("You are loop.")


def planned(window: ContextWindow, history: list) -> Request:
    """The next request, which must fit without a compaction."""
    request = window.plan(history, [])
    assert isinstance(request, Request), request
    return request


def numbered(tag: str, n: int) -> str:
    return "\n".join(f"{i:>6}\t{tag} line {i}: value = compute({i}, rate) + offset" for i in range(n))


def parallel_reads(task: UserMessage, n: int = 2, size: int = 400) -> list:
    calls = tuple(ToolCall(f"r{k}", "read_file", json.dumps({"path": f"f{k}.py"})) for k in range(n))
    return [SYSTEM, task, AssistantMessage(tool_calls=(ToolCall("l", "list_files", "{}"),), stop_reason="tool_calls"),
            ToolResult("l", "list_files", "f0.py f1.py"), AssistantMessage(tool_calls=calls, stop_reason="tool_calls"),
            *[ToolResult(f"r{k}", "read_file", numbered(f"f{k}", size)) for k in range(n)]]


def test_parallel_results_that_do_not_fit_together_are_clipped_to_fit_without_compaction():
    history = parallel_reads(UserMessage("Compare the two files."))
    before = list(history)
    window = ContextWindow(ctx_size=3000, reserve=1000)
    assert messages_tokens(history) > 2 * window.limit  # each read alone is over the whole window
    request = planned(window, history)  # no summary to ask for first
    assert history == before
    assert window.limit * 0.6 < request.tokens <= window.limit  # to the limit: they are what was just asked for
    shown = [m.content for m in request.messages[-2:]]
    for k, content in enumerate(shown):
        assert MARKER in content
        assert content.startswith(f"     0\tf{k} line 0:") and content.endswith(f"f{k} line 399: value = compute(399, rate) + offset")
    sizes = [estimate_tokens(c) for c in shown]
    assert abs(sizes[0] - sizes[1]) < 0.1 * max(sizes)  # equal results share the room equally
    check_pairing(request.messages)


def test_a_small_newest_result_stays_whole_while_its_large_sibling_is_clipped():
    history = parallel_reads(UserMessage("Compare the two files."))
    small = ToolResult("r1", "read_file", numbered("f1", 20))
    history[-1] = small
    history[-2] = ToolResult("r0", "read_file", numbered("f0", 1200))
    window = ContextWindow(ctx_size=3000, reserve=1000)
    request = planned(window, history)
    assert request.messages[-1] is small
    assert MARKER in request.messages[-2].content and request.tokens <= window.limit


def test_newest_results_are_not_clipped_while_the_request_fits():
    history = parallel_reads(UserMessage("Compare the two files."), size=30)
    window = ContextWindow(ctx_size=3000, reserve=1000)
    request = planned(window, history)
    assert request.messages == history


def test_a_request_that_does_not_fit_after_one_compaction_stops():
    # Only what is always sent verbatim can overflow now: here, a task that nearly fills the window.
    task = UserMessage("Apply this specification: " + " ".join(f"rule {i} says value {i * 3} is kept;" for i in range(195)))
    history = parallel_reads(task)
    window = ContextWindow(ctx_size=3000, reserve=1000)
    assert window.limit - 150 < messages_tokens(history[:2]) < window.limit
    step = window.plan(history, [])  # the loop runs the one compaction, then plans with compacted=True
    assert isinstance(step, Compaction)
    window.compacted(history, step, AssistantMessage(text="Listed the files; the reads follow."))
    with pytest.raises(ContextFull, match="even after compaction"):
        window.plan(history, [], compacted=True)


def test_nothing_older_to_summarise_and_no_fit_stops_without_asking_the_model():
    task = UserMessage("Apply this specification: " + " ".join(f"rule {i} says value {i * 3} is kept;" for i in range(250)))
    window = ContextWindow(ctx_size=3000, reserve=1000)
    with pytest.raises(ContextFull, match="nothing older is left to summarise"):  # not a Compaction to run
        window.plan([SYSTEM, task], [])


# ---- end to end -------------------------------------------------------------------------------

def test_three_parallel_long_reads_at_the_default_ctx_size_are_clipped_and_the_run_completes(run_loop, server,
                                                                                            tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    for k in range(3):
        write_lines(ws / f"big{k}.py", 2000, f"big{k}")
    reads = tools(*[("read_file", {"path": f"big{k}.py"}) for k in range(3)])
    server.add(reads, text("Each file computes ledger balances."))

    proc = agent(run_loop, server, ws, task="what do the three files do?")
    out = events(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out[-1]["status"] == "completed" and out[-1]["steps"] == 2 and len(server.requests) == 2
    second = server.requests[1]
    assert wire_tokens(second) <= 16384 - 4096  # the default window minus the answer's reserve
    assert_paired(second)
    sent = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert len(sent) == 3
    for k, content in enumerate(sent):
        assert MARKER in content and content.startswith(f"     1\tbig{k} line 0:")
        assert content.endswith("]") and f"in big{k}.py; " in content[-200:]  # the tail: where to continue

    session = Path(out[0]["path"])
    records = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines()]
    kept = [r["content"] for r in records if r.get("type") == "message" and r.get("role") == "tool"]
    assert len(kept) == 3
    for k, content in enumerate(kept):  # the session file keeps what the tool returned, unclipped
        assert MARKER not in content and f"big{k} line 500:" in content
        assert len(content) > 4 * len(sent[k])
    shown = [e["content"] for e in out if e["type"] == "tool_result"]
    assert shown == kept


def test_overflow_after_compaction_stops_instead_of_compacting_again(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "small.txt").write_text("hello\n")
    limit = base_tokens(run_loop, ws, "look at the files") + 1200
    # Only what is always sent verbatim can overflow now: here, the arguments of the newest call.
    content = "".join(f"entry_{i} = ledger.balance({i}) * rate\n" for i in range(160))
    assert estimate_tokens(content) > 1200
    turns = [tools(("read_file", {"path": "small.txt"})),
             tools(("write_file", {"path": "out.py", "content": content})), text("never sent")]
    server.add(*[dispatch(turns)] * 6)

    proc = agent(run_loop, server, ws, "--ctx-size", ctx_for(limit))
    out = events(proc.stdout)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert out[-1]["status"] == "token_limit" and "even after compaction" in out[-1]["message"]
    assert ["tools" in b for b in server.requests] == [True, True, False]  # one compaction, then stop
    steps = [e.get("kind", e["type"]) for e in out if e["type"] in ("notice", "compacted")]
    assert steps == ["checkpoint", "compact", "compacted"]  # the compaction is announced before it runs
