"""Stream assembly and the HTTP client against the fake server: quirks of real servers, chunking, retries."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopagent.cancel import Cancel
from loopagent.client import IncompleteTurn, ModelError
from loopagent.client.assemble import TurnAssembler
from loopagent.client.openai import OpenAIClient, build_request
from loopagent.events import TextDelta, ThinkingDelta
from loopagent.messages import AssistantMessage, SystemMessage, ToolCall, ToolResult, UserMessage
from tests.fakeserver import FakeServer, Reply, error, text_events, tool_events


def assemble(chunks: list[dict]) -> AssistantMessage:
    turn = TurnAssembler()
    for c in chunks:
        turn.feed(c)
    return turn.finish()


def delta(d: dict, finish: str | None = None) -> dict:
    return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


def test_fragments_merge_by_index_and_name_is_set_once():
    # A server that repeats the id and full name in every fragment (seen on real servers).
    frag = lambda args: delta({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "read_file", "arguments": args}}]})  # noqa: E731
    msg = assemble([frag('{"pa'), frag('th": "a.py"}'), delta({}, "tool_calls")])
    assert msg.tool_calls == (ToolCall("c1", "read_file", '{"path": "a.py"}'),)


def test_whole_calls_without_index_and_several_calls():
    msg = assemble([
        delta({"tool_calls": [{"id": "a", "function": {"name": "read_file", "arguments": '{"path": "x"}'}}]}),
        delta({"tool_calls": [{"id": "b", "function": {"name": "shell", "arguments": '{"command": "ls"}'}}]}),
        delta({}, "tool_calls"),
    ])
    assert [c.id for c in msg.tool_calls] == ["a", "b"]
    assert [c.name for c in msg.tool_calls] == ["read_file", "shell"]


def test_every_call_numbered_zero_but_distinct_ids():
    msg = assemble([
        delta({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "read_file", "arguments": "{}"}}]}),
        delta({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "grep", "arguments": "{}"}}]}),
        delta({}, "tool_calls"),
    ])
    assert [c.name for c in msg.tool_calls] == ["read_file", "grep"]


def test_missing_id_is_generated_and_stop_with_calls_means_calls():
    msg = assemble([delta({"tool_calls": [{"index": 0, "function": {"name": "shell", "arguments": "{}"}}]}),
                    delta({}, "stop")])
    assert msg.stop_reason == "tool_calls"
    assert msg.tool_calls[0].id.startswith("call_") and len(msg.tool_calls[0].id) > 8


def test_reasoning_fields_and_usage_in_final_chunk():
    turn = TurnAssembler()
    events = turn.feed(delta({"reasoning_content": "think "}))
    events += turn.feed(delta({"reasoning": "more"}))
    events += turn.feed(delta({"content": "answer"}, "stop"))
    turn.feed({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3}})
    msg = turn.finish()
    assert msg.thinking == "think more" and msg.text == "answer"
    assert msg.usage is not None and (msg.usage.prompt_tokens, msg.usage.completion_tokens) == (12, 3)
    assert events == [ThinkingDelta("think "), ThinkingDelta("more"), TextDelta("answer")]


def test_no_finish_reason_and_length_are_incomplete():
    with pytest.raises(IncompleteTurn, match="without a finish reason"):
        assemble([delta({"content": "half"})])
    with pytest.raises(IncompleteTurn, match="length"):
        assemble([delta({"tool_calls": [{"index": 0, "id": "x", "function": {"name": "shell"}}]}, "length")])


def test_error_object_in_stream_is_a_model_error():
    with pytest.raises(ModelError, match="context size exceeded"):
        assemble([{"error": {"message": "context size exceeded", "code": 400}}])


def test_wire_form_of_history():
    call = ToolCall("c1", "read_file", '{"path": "a"}')
    body = build_request("m", [SystemMessage("s"), UserMessage("u"), AssistantMessage(tool_calls=(call,)),
                               ToolResult("c1", "read_file", "text")], [], 100)
    assert body["messages"][2] == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}]}
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "text"}
    assert "tools" not in body and "tool_choice" not in body and body["max_tokens"] == 100


# ---- over real HTTP ----------------------------------------------------------------------------

LOGICAL = (
    [": keep-alive\n\n"]
    + tool_events([("read_file", {"path": "src/ünïcode.py"}), ("shell", {"command": "echo 'hé' && ls"})],
                  text="Looking — first.")
)


def complete(server: FakeServer, **kw) -> AssistantMessage:
    client = OpenAIClient(base_url=server.url, model="m", backoff=0.001, **kw)
    try:
        return client.complete([UserMessage("hi")], [], lambda e: None, Cancel())
    finally:
        client.close()


@pytest.fixture(scope="module")
def reference() -> AssistantMessage:
    with FakeServer([Reply(events=LOGICAL)]) as srv:
        return complete(srv)


def test_one_chunk_and_every_byte_boundary_assemble_the_same(reference):
    assert reference.text == "Looking — first." and len(reference.tool_calls) == 2
    with FakeServer([Reply(events=LOGICAL, split=1)]) as srv:
        assert complete(srv) == reference


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(split=st.integers(min_value=1, max_value=400))
def test_any_split_assembles_the_same(reference, split):
    with FakeServer([Reply(events=LOGICAL, split=split)]) as srv:
        assert complete(srv) == reference


def test_retry_after_is_honoured_and_bounded():
    delays: list[float] = []
    with FakeServer([error(429, "slow down", {"Retry-After": "7"}), Reply(events=text_events("ok"))]) as srv:
        client = OpenAIClient(base_url=srv.url, model="m", sleep=delays.append, max_backoff=5)
        msg = client.complete([UserMessage("hi")], [], lambda e: None, Cancel())
        client.close()
    assert msg.text == "ok" and delays == [5]


def test_retries_are_bounded_then_fail_with_the_server_message():
    with FakeServer([error(503, "busy")] * 3) as srv:
        client = OpenAIClient(base_url=srv.url, model="m", retries=2, sleep=lambda s: None)
        with pytest.raises(ModelError, match="HTTP 503.*busy"):
            client.complete([UserMessage("hi")], [], lambda e: None, Cancel())
        client.close()
        assert len(srv.requests) == 3


def test_cut_stream_is_not_retried():
    events = text_events("this answer is cut", finish=None)
    with FakeServer([Reply(events=events, done=False), Reply(events=text_events("second"))]) as srv:
        with pytest.raises(IncompleteTurn):
            complete(srv)
        assert len(srv.requests) == 1


def test_server_that_ignores_stream_true():
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "whole"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1}}
    with FakeServer([Reply(body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})]) as srv:
        assert complete(srv).text == "whole"
