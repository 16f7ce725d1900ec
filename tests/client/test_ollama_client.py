"""OllamaClient against the fake Ollama over real HTTP: the same events and errors as OpenAIClient.

Thinking, whole tool calls, cancel (the hang-up), the idle deadline, retries and their notices,
errors inside the stream, broken lines, refused connections, the non-streaming fallback, and
credentials kept out of messages. Translation and line splitting are pinned as pure values too.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from loopagent.cancel import Cancel
from loopagent.client import Cancelled, IncompleteTurn, ModelError
from loopagent.client.assemble import OutputCut
from loopagent.client.ndjson import LineDecoder
from loopagent.client.ollama import OllamaChunks, OllamaClient, ollama_endpoint, ollama_message
from loopagent.client.sse import LineTooLong
from loopagent.events import Notice, TextDelta, ThinkingDelta
from loopagent.messages import AssistantMessage, ToolCall, ToolResult, UserMessage
from tests.fakeollama import FakeOllama, OllamaReply, error, final, text, text_lines, tool_lines

HI = [UserMessage("hi")]
READ = {"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                         "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}


def complete(srv: FakeOllama, messages=HI, tool_list=(), emit=None, cancel=None, **kw) -> AssistantMessage:
    client = OllamaClient(base_url=srv.url, model="m", ctx_size=4096, backoff=0.001, **kw)
    try:
        return client.complete(messages, list(tool_list), emit or (lambda e: None), cancel or Cancel())
    finally:
        client.close()


def test_thinking_text_and_usage_come_through_as_the_openai_client_gives_them():
    seen = []
    with FakeOllama([OllamaReply(lines=text_lines("Four.", thinking="2+2 is 4"), split=7)]) as srv:
        reply = complete(srv, emit=seen.append)
    assert reply.text == "Four." and reply.thinking == "2+2 is 4" and reply.stop_reason == "stop"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (120, 12)
    assert [e.text for e in seen if isinstance(e, ThinkingDelta)] == ["2+2 is 4"]
    assert "".join(e.text for e in seen if isinstance(e, TextDelta)) == "Four."


def test_whole_tool_calls_get_distinct_ids_even_when_ollama_repeats_one():
    lines = tool_lines(("read_file", {"path": "a"}), ("read_file", {"path": "b"}))
    for call in lines[0]["message"]["tool_calls"]:
        call["id"] = "call_0"  # a server that numbers every call alike
    with FakeOllama([OllamaReply(lines=lines)]) as srv:
        reply = complete(srv, tool_list=[READ])
    assert reply.stop_reason == "tool_calls"  # done_reason "stop" with calls: the calls decide
    assert [json.loads(c.arguments) for c in reply.tool_calls] == [{"path": "a"}, {"path": "b"}]
    assert reply.tool_calls[0].id == "call_0" and reply.tool_calls[1].id not in ("", "call_0")


def test_done_reason_length_is_an_output_cut_with_the_limit():
    with FakeOllama([OllamaReply(lines=tool_lines(("read_file", {"path": "a"}), done_reason="length"))]) as srv:
        with pytest.raises(OutputCut) as info:
            complete(srv, tool_list=[READ], max_tokens=64)
    assert info.value.limit == 64 and info.value.cut_call
    assert "output limit of 64 tokens" in info.value.note()


def test_cancel_from_another_thread_hangs_up_a_blocked_read_and_keeps_the_partial_text():
    token, first = Cancel(), threading.Event()
    lines = text_lines("partial answer")[:-1]  # no final object: the server then stays silent
    emit = lambda e: first.set() if isinstance(e, TextDelta) else None  # noqa: E731
    setter = threading.Thread(target=lambda: first.wait(10) and token.set())
    with FakeOllama([OllamaReply(lines=lines, hang_after=True)]) as srv:
        setter.start()
        start = time.monotonic()
        with pytest.raises(Cancelled) as info:
            complete(srv, emit=emit, cancel=token, read_timeout=30)
        took = time.monotonic() - start
        setter.join(10)
    assert took < 3
    assert info.value.partial.text == "partial answer"


def test_the_idle_deadline_ends_a_stream_of_empty_objects():
    ticks = iter(range(0, 10_000, 10))  # every look at the clock is 10 s later
    empty = [{"model": "m", "message": {"role": "assistant", "content": ""}, "done": False}] * 50
    with FakeOllama([OllamaReply(lines=empty, hang_after=True)]) as srv:
        with pytest.raises(IncompleteTurn) as info:
            complete(srv, read_timeout=5, clock=lambda: next(ticks))
    assert "sent no text, thinking or tool call for 5 s" in str(info.value)


def test_a_silent_server_hits_the_read_timeout():
    with FakeOllama([OllamaReply(lines=[], hang_after=True)]) as srv:
        with pytest.raises(IncompleteTurn) as info:
            complete(srv, read_timeout=0.3)
    assert "no data from the model for 0.3 s" in str(info.value)


def test_busy_is_retried_with_a_notice_and_ollamas_error_string_is_shown():
    seen = []
    with FakeOllama([error(503, "server busy"), text("ok")]) as srv:
        assert complete(srv, emit=seen.append).text == "ok"
    retries = [e.text for e in seen if isinstance(e, Notice) and e.kind == "retry"]
    assert len(retries) == 1 and "HTTP 503" in retries[0] and "/api/chat" in retries[0]
    with FakeOllama([error(400, "registry.ollama.ai/library/gemma3:1b does not support tools")]) as srv:
        with pytest.raises(ModelError) as info:
            complete(srv, tool_list=[READ])
    assert "HTTP 400" in str(info.value) and "does not support tools" in str(info.value)
    assert "pick one tagged" in str(info.value)


def test_an_error_inside_the_stream_is_a_model_error():
    lines = [*text_lines("so far")[:-1], {"error": "an error was encountered while running the model"}]
    with FakeOllama([OllamaReply(lines=lines)]) as srv:
        with pytest.raises(ModelError) as info:
            complete(srv)
    assert "error was encountered" in str(info.value)


@pytest.mark.parametrize("bad", ["{not json\n", "[1, 2]\n"])
def test_a_broken_line_is_an_incomplete_turn(bad):
    with FakeOllama([OllamaReply(lines=[*text_lines("so far")[:-1], bad, final()])]) as srv:
        with pytest.raises(IncompleteTurn) as info:
            complete(srv)
    assert "not" in str(info.value) and info.value.partial.text == "so far"


def test_a_stream_without_its_final_object_is_incomplete():
    with FakeOllama([OllamaReply(lines=text_lines("half")[:-1])]) as srv:
        with pytest.raises(IncompleteTurn) as info:
            complete(srv)
    assert "without a finish reason" in str(info.value)


def test_a_server_that_is_not_ollama_is_named():
    with FakeOllama([OllamaReply(body=b"<html></html>", content_type="text/html")]) as srv:
        with pytest.raises(ModelError) as info:
            complete(srv)
    assert "is it an Ollama server" in str(info.value)


def test_refused_connection_after_retries_says_to_start_ollama_and_hides_credentials():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    client = OllamaClient(base_url=f"http://bob:hunter2@127.0.0.1:{port}/?key=sekrit", model="m", retries=1,
                          sleep=lambda s: None)
    with pytest.raises(ModelError) as info:
        client.complete(HI, [], lambda e: None, Cancel())
    said = str(info.value)
    assert "connection refused" in said and "ollama serve" in said and "after 2 attempts" in said
    assert "hunter2" not in said and "sekrit" not in said


def test_a_refusal_to_stream_tools_falls_back_to_one_json_reply():
    reply = json.dumps({**final(), "message": tool_lines(("read_file", {"path": "a"}))[0]["message"]}).encode()
    with FakeOllama([error(500, "Cannot use tools with stream"),
                     OllamaReply(body=reply, content_type="application/json; charset=utf-8")]) as srv:
        seen = []
        answer = complete(srv, tool_list=[READ], emit=seen.append)
        assert [r["stream"] for r in srv.requests] == [True, False]
    assert answer.tool_calls[0].name == "read_file"
    assert any(isinstance(e, Notice) and e.kind == "fallback" for e in seen)


def test_requests_carry_num_ctx_and_the_openai_url_is_taken_back_to_ollamas_root():
    with FakeOllama([text("ok")]) as srv:
        client = OllamaClient(base_url=srv.url + "/v1/", model="m", ctx_size=32768)
        client.complete(HI, [], lambda e: None, Cancel())
        client.close()
        assert srv.paths == ["POST /api/chat"]
        assert srv.requests[0]["options"]["num_ctx"] == 32768
    assert ollama_endpoint("http://h:11434/ollama/?x=1") == "http://h:11434/ollama/api/chat?x=1"


# ---- pure parts ----------------------------------------------------------------------------------

def test_messages_in_ollamas_shape():
    call = ToolCall(id="c1", name="read_file", arguments='{"path": "a.py"}')
    assert ollama_message(AssistantMessage(text="", tool_calls=(call,))) == {
        "role": "assistant", "content": "",
        "tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "a.py"}}}]}
    broken = ToolCall(id="c2", name="read_file", arguments="{oops")  # it got an error result; sent with none
    assert ollama_message(AssistantMessage(tool_calls=(broken,)))["tool_calls"][0]["function"]["arguments"] == {}
    result = ToolResult(call_id="c1", name="read_file", content="1 x = 1")
    assert ollama_message(result) == {"role": "tool", "content": "1 x = 1", "tool_name": "read_file"}


def test_odd_reply_objects_never_crash_the_translation():
    chunks = OllamaChunks()
    for obj in ({"message": "text"}, {"message": {"tool_calls": "x"}}, {"message": {"tool_calls": [1, {}]}},
                {"done": True, "prompt_eval_count": -5, "eval_count": "many"}, {"done": True, "done_reason": 3}):
        out = chunks.chunk(obj)
        assert isinstance(out["choices"][0]["delta"], dict)
    assert chunks.chunk({"done": True, "prompt_eval_count": -5, "eval_count": True})["usage"] == {
        "prompt_tokens": 0, "completion_tokens": 0}
    assert chunks.chunk({"done": True})["choices"][0]["finish_reason"] == "stop"
    assert "usage" not in chunks.chunk({"done": True})


def test_the_line_decoder_is_bounded_and_keeps_lines_split_across_chunks():
    dec = LineDecoder(max_bytes=32)
    assert dec.feed(b'{"a":') == [] and dec.feed(b' 1}\n\n{"b": 2}\r\n{"c"') == ['{"a": 1}', '{"b": 2}']
    assert dec.close() == ['{"c"']
    with pytest.raises(LineTooLong):
        LineDecoder(max_bytes=32).feed(b"x" * 40)
