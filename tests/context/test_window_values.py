"""The context window and the guards as pure values: estimates, pairing, stubs, clips, compaction, nudges."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from loopagent.cancel import Cancel
from loopagent.context import (
    SUMMARY_HEADER,
    ContextWindow,
    Request,
    check_pairing,
    clip_text,
    estimate_tokens,
    messages_tokens,
    superseded,
    tools_tokens,
)
from loopagent.errors import BrokenHistory, BudgetSpent
from loopagent.events import Compacted
from loopagent.guards import QUESTION_NUDGE, Repeats, asks_or_defers
from loopagent.loop import Agent
from loopagent.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from loopagent.scripted import ScriptedModel
from loopagent.tools import Registry, ToolContext, default_tools
from loopagent.tools.workspace import Workspace

SYSTEM = SystemMessage("You are loop.\n\n# AGENTS.md\nAlways run `make lint` before finishing.")
TASK = UserMessage("Fix the rounding bug in ledger.py.")


SUMMARY = "Read ledger.py; rounding is in entry_3; still to do: edit and test."


def summarizer(*turns: str) -> ScriptedModel:
    """A model that answers summary requests (sent without tools) with a counted usage, others with `turns`."""
    return ScriptedModel(turns, summary=AssistantMessage(text=SUMMARY, usage=Usage(500, 60)))


def agent(ws: Path, model: ScriptedModel, seen: list) -> Agent:
    """The loop with read_file (the tool of `long_history`) in `ws`: it compacts when a request must make
    room, and on /compact."""
    return Agent(model=model, registry=Registry([t for t in default_tools() if t.name == "read_file"]),
                 tools=ToolContext(Workspace(ws)), listeners=(seen.append,))


def planned(window: ContextWindow, history: list[Message], budget: int | None = None) -> Request:
    """The next request, which must fit without a compaction."""
    request = window.plan(history, [], budget)
    assert isinstance(request, Request), request
    return request


def turn(n: int, name: str, args: dict, content: str, is_error: bool = False) -> list[Message]:
    call = ToolCall(f"c{n}", name, json.dumps(args))
    return [AssistantMessage(tool_calls=(call,), stop_reason="tool_calls"), ToolResult(call.id, name, content, is_error)]


def lines(tag: str, n: int) -> str:
    return "\n".join(f"{i:>6}\t{tag} line {i}: value = compute({i}, rate) + offset" for i in range(n))


# ---- estimates ------------------------------------------------------------------------------

def test_estimate_is_zero_for_nothing_and_dearer_for_code_than_prose():
    prose = "The ledger keeps every entry in the order it was booked and sums them at the end. " * 10
    code = "    t[i] = ledger.get(3) * (rate + 0.07)  # {x: 1}\n" * 10
    assert estimate_tokens("") == 0
    assert estimate_tokens(prose) == pytest.approx(len(prose) / 4, rel=0.1)
    assert estimate_tokens(code) > len(code) / 4 * 1.3  # symbols and digits merge less in real tokenizers
    assert estimate_tokens("日本語のテキスト") >= len("日本語のテキスト") * 0.75


# ---- pairing ----------------------------------------------------------------------------------

def test_pairing_accepts_answered_calls_and_rejects_orphans():
    good = [SYSTEM, TASK, *turn(1, "read_file", {"path": "a"}, "x"), AssistantMessage("done")]
    check_pairing(good)
    with pytest.raises(BrokenHistory, match="have no result"):
        check_pairing(good[:3] + [UserMessage("hi")])
    with pytest.raises(BrokenHistory, match="answers no call"):
        check_pairing([SYSTEM, TASK, good[3]])
    with pytest.raises(BrokenHistory, match="end of the history"):
        check_pairing(good[:3])


# ---- stubs and clips --------------------------------------------------------------------------

def test_a_covering_later_read_supersedes_and_an_edit_makes_a_read_stale():
    history = [SYSTEM, TASK,
               *turn(1, "read_file", {"path": "./a.py"}, "old a"),                    # 3: superseded by 5
               *turn(2, "read_file", {"path": "a.py"}, "new a"),                      # 5: not superseded by a part
               *turn(3, "read_file", {"path": "a.py", "offset": 5, "limit": 3}, "part"),
               *turn(4, "read_file", {"path": "b.py"}, "b"),                          # 9: stale after the edit
               *turn(5, "edit_file", {"path": "b.py", "old_string": "x", "new_string": "y"}, "edited b.py"),
               *turn(6, "read_file", {"path": "c.py"}, "c"),                          # 13: kept: later read failed
               *turn(7, "read_file", {"path": "c.py"}, "c.py does not exist", is_error=True),
               *turn(8, "shell", {"command": "pytest -q"}, "1 failed"),               # 17: ran again later
               *turn(9, "shell", {"command": "pytest -q"}, "1 passed")]
    stubs = superseded(history)
    assert stubs == {
        3: "[superseded: a.py was read again later (call c2); the newer content is there]",
        9: "[stale: b.py was changed later by edit_file (call c5); read it again for its current text]",
        17: "[superseded: this command ran again later (call c9); see that output]",
    }
    assert superseded(history, start=10) == {17: stubs[17]}


def test_clip_keeps_head_and_a_longer_tail_with_a_marker():
    text = "\n".join(f"line {i}" for i in range(1000))
    clipped = clip_text(text, 400)
    assert clipped.startswith("line 0\n") and clipped.endswith("line 999")
    assert "clipped to save context; run the tool again to see them" in clipped
    assert len(clipped) < 600
    assert clip_text("short", 400) == "short"


def test_room_is_made_by_stubs_then_clips_and_the_history_is_never_changed():
    history = [SYSTEM, TASK, *turn(1, "read_file", {"path": "a.py"}, lines("a", 120)),
               *turn(2, "shell", {"command": "make"}, lines("make", 120)),
               *turn(3, "read_file", {"path": "a.py"}, lines("a", 120))]
    before = list(history)
    full = messages_tokens(history)
    window = ContextWindow(ctx_size=2 * int(full * 0.8), reserve=4096)  # limit: 80% of the full size
    request = planned(window, history)
    assert history == before
    assert request.tokens <= window.limit * 0.6  # down to the low-water mark, not just under the limit
    shown = [m.content for m in request.messages if isinstance(m, ToolResult)]
    assert shown[0].startswith("[superseded: a.py")
    assert "clipped to save context" in shown[1]
    assert shown[2] == lines("a", 120)  # the last turn is never clipped
    again = planned(window, history + [AssistantMessage("done")])
    assert again.messages[:-1] == request.messages  # decisions stick: the prefix stays the same


# ---- compaction -------------------------------------------------------------------------------

def long_history() -> list[Message]:
    history: list[Message] = [SYSTEM, TASK]
    for n in range(8):
        history += turn(n, "read_file", {"path": f"f{n}.py"}, lines(f"f{n}", 12))
        if n == 3:
            history += [AssistantMessage("Done?"), UserMessage("No: use Decimal, not float."),
                        AssistantMessage("Understood."), UserMessage(QUESTION_NUDGE)]
    return history


def test_compaction_keeps_system_task_and_user_messages_verbatim_and_pairs_intact(tmp_path):
    history, model, seen = long_history(), summarizer("Fixed."), []
    before = list(history)
    run = agent(tmp_path, model, seen)
    window = run.context
    window.ctx_size = 2 * (messages_tokens(history) + tools_tokens(run.registry.specs()) - 200)
    window.reserve = 8192
    end = run.run(history, "", Cancel())
    assert end.status == "completed" and history[:-1] == before and history[-1].text == "Fixed."
    assert len(model.requests) == 2 and model.requests[0][1] == []  # a summary request carries no tools
    asked = model.requests[0][0][1].content
    assert TASK.content in asked and "f0 line 0" in asked and "what remains to do" in asked
    msgs = list(model.requests[1][0])  # the request the summary made room for
    assert msgs[0] == SYSTEM and msgs[1] == TASK
    assert msgs[2] == UserMessage("No: use Decimal, not float.")
    assert msgs[3] == UserMessage(f"{SUMMARY_HEADER}\n\n{SUMMARY}")
    assert QUESTION_NUDGE not in [m.content for m in msgs if isinstance(m, UserMessage)]
    assert isinstance(msgs[4], AssistantMessage) and msgs[-1] == before[-1]
    check_pairing(msgs)
    (event,) = [e for e in seen if isinstance(e, Compacted)]
    assert window.tokens(msgs) <= window.limit and event.usage == Usage(500, 60)
    assert history[event.upto] is msgs[4] and event.tokens_after < event.tokens_before

    resumed = ContextWindow(ctx_size=window.ctx_size, reserve=window.reserve, fixed=window.fixed)
    resumed.restore(event)
    assert resumed.view(history) == window.view(history)


def test_compact_on_demand_passes_the_focus_and_does_nothing_on_a_short_history(tmp_path):
    model = summarizer()
    run = agent(tmp_path, model, [])
    assert run.compact([SYSTEM, TASK, *turn(1, "list_files", {}, "a.py")], Cancel()) is None and model.requests == []
    event = run.compact(long_history(), Cancel(), focus="the Decimal change")
    assert event is not None and event.focus == "the Decimal change"
    assert "Focus especially on: the Decimal change" in model.requests[0][0][1].content


def test_a_compaction_that_would_break_the_budget_is_not_sent():
    history = long_history()
    window = ContextWindow(ctx_size=2 * (messages_tokens(history) - 200), reserve=8192)
    with pytest.raises(BudgetSpent, match="compacting the context"):  # raised instead of a summary to ask for
        window.plan(history, [], budget=100)


# ---- accounting -------------------------------------------------------------------------------

def test_accounting_prefers_the_server_and_calibrates_upwards_only():
    window = ContextWindow()
    history = [SYSTEM, TASK, *turn(1, "read_file", {"path": "a"}, lines("a", 200))]
    request = planned(window, history)
    estimated = window.account(1, request, AssistantMessage("ok"))
    assert estimated.estimated and estimated.usage.prompt_tokens == request.tokens
    assert 0.8 < estimated.tool_share < 1
    window.account(2, request, AssistantMessage("ok", usage=Usage(request.tokens // 2, 3)))
    assert window.calibration == 1.0
    counted = window.account(3, request, AssistantMessage("ok", usage=Usage(int(request.tokens * 1.5), 3)))
    assert not counted.estimated and counted.usage.prompt_tokens == int(request.tokens * 1.5)
    assert window.calibration == pytest.approx(1.5, rel=0.01)
    assert planned(window, history).tokens == pytest.approx(request.tokens * 1.5, rel=0.01)


# ---- guards -----------------------------------------------------------------------------------

@pytest.mark.parametrize("answer", [
    "I found the cause. Should I fix it?",
    "The parser is updated.\n\nNext I'll run the test suite.",
    "Let me run the tests to confirm.",
    "Done with part one. I will now update the README.",
    "Two options exist. Let me know which one you prefer.",
])
def test_answers_that_ask_or_defer(answer):
    assert asks_or_defers(answer)


@pytest.mark.parametrize("answer", [
    "Fixed the rounding in ledger.py; all 12 tests pass.",
    "Is it fixed? Earlier I asked myself that.\n\nYes: the bug is fixed and the tests pass.",
    "Changed the regex to ```a?b``` and `x?`; tests pass.",
    "",
])
def test_answers_that_finish(answer):
    assert not asks_or_defers(answer)


def test_repeats_count_identical_calls_in_a_row_and_ignore_polling():
    same = ToolCall("c", "read_file", '{"path": "a"}')
    reordered = ToolCall("d", "read_file", '{ "path":"a" }')
    result = ToolResult("c", "read_file", "same")
    repeats = Repeats()
    shown = [repeats.observe(call, result).content for call in (same, reordered, same, same, same)]
    assert shown[:2] == ["same", "same"]
    assert shown[2].endswith("three times with the same result; change approach]")
    assert repeats.stuck and "5 times in a row" in shown[4]

    other = Repeats()
    for content in ("1 failed", "1 failed", "0 failed", "0 failed"):
        other.observe(same, ToolResult("c", "shell", content))
    assert other.count == 2

    poll = ToolCall("p", "shell", '{"command": "sleep 5; curl -s localhost:8000/status"}')
    polling = Repeats()
    for _ in range(6):
        polling.observe(poll, ToolResult("p", "shell", "pending"))
    assert not polling.stuck


# ---- the benchmark, quick -------------------------------------------------------------------

def test_bench_saves_forty_percent_with_no_request_over_the_limit():
    path = Path(__file__).resolve().parent.parent.parent / "bench" / "bench_context.py"
    spec = importlib.util.spec_from_file_location("bench_context", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    r = bench.replay(16384)
    assert len(r["ours"]) == 30
    assert max(r["ours"]) <= r["limit"] < max(r["naive"])
    assert sum(r["ours"]) + r["compaction"] <= 0.6 * sum(r["naive"])
