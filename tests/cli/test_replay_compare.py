"""The comparison behind `loop replay` (loopagent/rerun.py): histories in, verdicts out."""

from __future__ import annotations

from loopagent.details import Details
from loopagent.messages import AssistantMessage, ToolCall, ToolResult, UserMessage
from loopagent.rerun import CallOutcome, compare, conclusion, mask, outcomes, table


def turn(*calls: ToolCall) -> AssistantMessage:
    return AssistantMessage(tool_calls=calls, stop_reason="tool_calls")


def test_outcomes_pair_results_with_their_own_turn() -> None:
    # The same id in two turns (some servers count from 0 each turn): each result answers its own turn.
    a, b = ToolCall("call_0", "shell", '{"command": "false"}'), ToolCall("call_0", "read_file", '{"path": "x"}')
    history = [UserMessage("t"), turn(a), ToolResult.error("exit code 1\n", Details("error", exit_code=1)).answering(a),
               turn(b), ToolResult.ok("1\tx").answering(b), AssistantMessage(text="done")]
    found = outcomes(history)
    assert [(o.tool, o.summary) for o in found] == [("shell", "exit 1"), ("read_file", "ok")]
    cut = outcomes(history[:4])  # the replay stopped before the second call got its result
    assert cut[1].summary == "no result"
    verdicts = compare(found, cut)
    assert [v.same for v in verdicts] == [True, False]
    assert conclusion(verdicts) == "replay: call 2 (read_file x) diverges: recorded ok, now not run"
    assert compare(found, found[:1])[1].now == "not run"
    assert compare(cut, found)[1].same  # a recording cut off mid-call: that call's outcome is unknown


def test_strict_masks_durations_and_the_workspace() -> None:
    was = CallOutcome("shell", "{}", False, 0, "ok", "exit code 0\n/tmp/a/ws/t.py passed in 0.12s (0:00:01.50)\n")
    now = CallOutcome("shell", "{}", False, 0, "ok", "exit code 0\n/tmp/x/ws/t.py passed in 3.4 s (0:00:02.00)\n")
    assert compare([was], [now], strict=True, roots=("/tmp/a/ws", "/tmp/x/ws"))[0].same
    assert not compare([was], [now], strict=True)[0].same  # the paths differ when not masked
    other = CallOutcome("shell", "{}", False, 0, "ok", "exit code 0\n/tmp/x/ws/t.py FAILED in 3.4 s\n")
    verdict = compare([was], [other], strict=True, roots=("/tmp/a/ws", "/tmp/x/ws"))[0]
    assert verdict.why.startswith("result text differs: recorded line 2") and "FAILED" in verdict.why
    assert compare([was], [other])[0].same  # without --strict only is_error and exit codes count
    assert mask("took 250ms, 2 seconds, 1.5s; 10 files") == "took <duration>, <duration>, <duration>; 10 files"


def test_a_different_call_and_the_table() -> None:
    was = CallOutcome("shell", '{"command": "make"}', True, 2, "error")
    now = CallOutcome("shell", '{"command": "make test"}', True, 2, "error")
    assert compare([was], [now])[0].why.startswith("a different call")
    flipped = CallOutcome("read_file", '{"path": "x"}', True, None, "error")
    good = CallOutcome("read_file", '{"path": "x"}', False, None, "ok")
    verdict = compare([flipped], [good])[0]
    assert verdict.why == "recorded an error, now success"
    lines = table([verdict])
    assert lines[0].split() == ["#", "tool", "call", "recorded", "now", "verdict"]
    assert lines[1].split()[:5] == ["1", "read_file", "x", "error", "ok"] and "DIFFERS" in lines[1]
