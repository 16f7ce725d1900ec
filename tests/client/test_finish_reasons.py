"""Finish reasons from other servers' dialects (issue 21 item 7): normal ends, and unknown ones after a complete stream.

TGI-, Together- and Anthropic-style gateways end a normal answer with `eos`, `end_turn` or `end`.
A finish reason loop does not know, after a stream the server closed with `[DONE]`, keeps the
answer and says the reason in a notice; without `[DONE]` the turn is still incomplete.
"""

from __future__ import annotations

import json

import pytest

from loopagent.cancel import Cancel
from loopagent.client import IncompleteTurn
from loopagent.client.assemble import OutputCut, TurnAssembler
from loopagent.client.openai import OpenAIClient
from loopagent.events import Notice
from loopagent.messages import UserMessage
from tests.fakeserver import FakeServer, Reply, text, text_events, tool_events


def raw_stream(answer: str, finish: str, done: bool = True) -> Reply:
    """The text as a gateway streams it, ended by `finish`, with or without `[DONE]`."""
    return Reply(events=text_events(answer, finish=finish), done=done)


def ask(reply: Reply):
    notices: list[Notice] = []
    with FakeServer([reply]) as srv:
        client = OpenAIClient(srv.url, "m", retries=0)
        try:
            msg = client.complete([UserMessage("hi")], [], lambda e: notices.append(e) if isinstance(e, Notice) else None, Cancel())
        finally:
            client.close()
    return msg, [n.text for n in notices]


@pytest.mark.parametrize("finish", ["eos", "end_turn", "end", "eos_token", "stop_sequence", "stop"])
def test_gateway_ends_are_normal_ends(finish):
    msg, notices = ask(raw_stream("the answer", finish))
    assert msg.text == "the answer" and msg.stop_reason == "stop"
    assert notices == []


@pytest.mark.parametrize("finish", ["eos", "end_turn", "end"])
def test_gateway_ends_are_normal_without_done_too(finish):
    msg, _ = ask(raw_stream("the answer", finish, done=False))
    assert msg.text == "the answer"


def test_an_unknown_reason_after_done_keeps_the_text_and_says_why():
    msg, notices = ask(raw_stream("kept answer", "completed_ok"))
    assert msg.text == "kept answer" and msg.stop_reason == "stop"
    assert len(notices) == 1 and "'completed_ok'" in notices[0] and "kept" in notices[0]


def test_an_unknown_reason_without_done_is_still_incomplete():
    with pytest.raises(IncompleteTurn, match="completed_ok"):
        ask(raw_stream("maybe cut", "completed_ok", done=False))


@pytest.mark.parametrize("finish", ["content_filter", "refusal"])
def test_a_withheld_reply_is_never_kept(finish):
    with pytest.raises(IncompleteTurn, match=finish):
        ask(raw_stream("half of it", finish))


def test_an_unknown_reason_with_a_tool_call_runs_nothing():
    turn = TurnAssembler()
    for chunk in tool_events([("shell", {"command": "ls"})], finish="whatever"):
        turn.feed(chunk)
    with pytest.raises(IncompleteTurn, match="did not run"):
        turn.finish(complete=True)


def test_max_tokens_is_the_output_limit():
    turn = TurnAssembler()
    for chunk in text_events("cut", finish="max_tokens"):
        turn.feed(chunk)
    with pytest.raises(OutputCut):
        turn.finish(complete=True)


def test_the_real_entry_point_keeps_an_answer_with_an_unknown_reason(run_loop, tmp_path):
    with FakeServer([raw_stream("the final answer", "banana"), text("unused")]) as srv:
        proc = run_loop("agent", "-C", str(tmp_path), "--base-url", srv.url, "--json", "--no-checkpoints",
                        "say it", cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[-1]["status"] == "completed"
    assert any(e["type"] == "assistant" and e["text"] == "the final answer" for e in events)
    notices = [e["text"] for e in events if e["type"] == "notice" and e["kind"] == "warning"]
    assert len(notices) == 1 and "'banana'" in notices[0] and "'banana'" in proc.stderr
