"""--ctx-size auto through the real `loop`: asked of the server once, kept in servers.json, reported
in the session line and a notice; small windows get a compact prompt and a reply budget that fits."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from loopagent.prompt import COMPACT_RULES, RULES
from tests.fakeserver import FakeServer, Reply, text, tools

PROPS = {"default_generation_settings": {"n_ctx": 4096, "n_predict": -1}, "total_slots": 1}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "timeparse.py").write_text("def parse(s):\n    return int(s[:-1]) * 60\n")
    return root


def run(run_loop, server: FakeServer, ws: Path, *extra: str, task: str = "hi"):
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                    "--no-checkpoints", *extra, task)
    out = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert out and out[-1]["type"] == "result", (proc.stdout, proc.stderr)
    return proc, out


def session(out: list[dict]) -> dict:
    assert out[0]["type"] == "session"  # the feed still opens with the session line
    return out[0]


def notes(out: list[dict]) -> list[str]:
    return [e["text"] for e in out if e["type"] == "notice" and e["kind"] == "note"]


def record(loop_home: Path) -> dict:
    (only,) = json.loads((loop_home / "servers.json").read_text())["servers"].values()
    return only


def test_props_size_is_used_kept_and_not_asked_again(run_loop, ws, loop_home):
    with FakeServer([text("hello"), text("again")], props=PROPS) as srv:
        proc, out = run(run_loop, srv, ws)
        assert proc.returncode == 0, proc.stderr
        assert (session(out)["ctx_size"], session(out)["ctx_source"]) == (4096, "server")
        assert any("llama.cpp /props" in n and f"{srv.url[:-3]}/props" in n for n in notes(out)), notes(out)
        assert srv.gets == ["/props"]  # one short request, before the first chat request
        assert record(loop_home)["ctx_size"] == 4096 and record(loop_home)["ctx_source"] == "llama.cpp /props"
        proc, out = run(run_loop, srv, ws)
        assert (session(out)["ctx_size"], session(out)["ctx_source"]) == (4096, "server")
        assert srv.gets == ["/props"]  # the kept answer: nothing asked on the second run
        assert not any("/props" in n for n in notes(out))  # and nothing new to say about it


def test_a_kept_answer_older_than_a_day_is_asked_again(run_loop, ws, loop_home):
    with FakeServer([text("hello"), text("again")], props=PROPS) as srv:
        run(run_loop, srv, ws)
        data = json.loads((loop_home / "servers.json").read_text())
        (key,) = data["servers"]
        data["servers"][key]["ctx_learned"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 90000))
        (loop_home / "servers.json").write_text(json.dumps(data))
        srv.props = {"default_generation_settings": {"n_ctx": 32768}}  # restarted with a bigger window
        proc, out = run(run_loop, srv, ws)
        assert session(out)["ctx_size"] == 32768 and srv.gets == ["/props", "/props"]


def test_vllm_model_list_gives_the_size(run_loop, ws):
    models = [{"id": "qwen", "object": "model", "owned_by": "vllm", "max_model_len": 32768}]
    with FakeServer([text("hello")], models=models) as srv:
        proc, out = run(run_loop, srv, ws, "-m", "qwen")
        assert (session(out)["ctx_size"], session(out)["ctx_source"]) == (32768, "server")
        assert srv.gets == ["/props", "/v1/models"]


def test_nothing_reported_falls_back_to_16384_with_a_notice_and_is_remembered(run_loop, ws, loop_home):
    with FakeServer([text("hello"), text("again")]) as srv:
        proc, out = run(run_loop, srv, ws)
        assert proc.returncode == 0, proc.stderr
        assert (session(out)["ctx_size"], session(out)["ctx_source"]) == (16384, "default")
        (note,) = [n for n in notes(out) if "16,384" in n]
        assert "--ctx-size" in note and srv.url in note
        assert "loop: note: context size 16,384" in proc.stderr
        assert srv.gets == ["/props", "/v1/models", "/api/v0/models"] and [p for p, _ in srv.posts] == []
        assert record(loop_home)["ctx_source"] == ""  # asked, nothing answered: kept so
        run(run_loop, srv, ws)
        assert len(srv.gets) == 3  # not asked again


def test_a_number_wins_and_nothing_is_asked(run_loop, ws, loop_home):
    with FakeServer([text("hello")], props=PROPS) as srv:
        proc, out = run(run_loop, srv, ws, "--ctx-size", "12000")
        assert (session(out)["ctx_size"], session(out)["ctx_source"]) == (12000, "flag")
        assert srv.gets == [] and not (loop_home / "servers.json").exists()
    (ws / ".loop").mkdir()
    (ws / ".loop" / "config.json").write_text('{"ctx_size": 9000}')  # a project file may lower it
    with FakeServer([text("hello")], props=PROPS) as srv:
        proc, out = run(run_loop, srv, ws)
        assert (session(out)["ctx_size"], session(out)["ctx_source"]) == (9000, "config") and srv.gets == []


def test_replay_asks_nothing(run_loop, ws, loop_home, tmp_path):
    recording = tmp_path / "turns.json"
    chunk = {"choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": "stop"}]}
    recording.write_text(json.dumps({"turns": [{"chunks": [chunk]}]}))
    proc = run_loop("agent", "-C", str(ws), "--json", "--no-checkpoints", "--replay", str(recording),
                    "--base-url", "http://127.0.0.1:9/v1", "hi")
    out = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert out[0]["ctx_source"] == "default" and out[0]["ctx_size"] == 16384, proc.stderr
    assert not (loop_home / "servers.json").exists()


def test_an_unreachable_server_is_not_remembered(run_loop, ws, loop_home):
    proc = run_loop("agent", "-C", str(ws), "--json", "--no-checkpoints", "--base-url",
                    "http://127.0.0.1:9/v1", "hi", env={"LOOP_RETRIES": "0"})
    out = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert out[0]["ctx_source"] == "default" and any("did not answer" in n for n in notes(out)), proc.stdout
    assert not (loop_home / "servers.json").exists()  # started later, the server is asked then


def test_small_window_from_the_server_gets_the_compact_prompt_and_a_fitting_reply_budget(run_loop, ws):
    props = {"default_generation_settings": {"n_ctx": 2048}}
    with FakeServer([tools(("read_file", {"path": "timeparse.py"})), text("It parses minutes.")], props=props) as srv:
        proc, out = run(run_loop, srv, ws, task="read timeparse.py and tell me what it does")
        assert proc.returncode == 0, proc.stderr
        first = srv.requests[0]
        system = first["messages"][0]["content"]
        assert system.startswith(COMPACT_RULES) and RULES not in system
        assert first["max_tokens"] == 512 and all(r["max_tokens"] == 512 for r in srv.requests)
        (note,) = [n for n in notes(out) if "small context window" in n]
        assert "512" in note
        assert session(out)["ctx_size"] == 2048
        assert out[-1]["status"] == "completed"
        offered = [t["function"]["name"] for t in first["tools"]]  # no room for a checklist or delegation
        assert offered == ["read_file", "list_files", "grep", "write_file", "edit_file", "shell"]


def test_a_normal_window_keeps_the_full_prompt_and_max_tokens(run_loop, ws):
    with FakeServer([text("hello")], props={"n_ctx": 8192}) as srv:
        run(run_loop, srv, ws)
        system = srv.requests[0]["messages"][0]["content"]
        assert system.startswith(RULES) and srv.requests[0]["max_tokens"] == 4096
        assert {"todo_write", "task"} <= {t["function"]["name"] for t in srv.requests[0]["tools"]}


def test_junk_from_the_server_is_ignored(run_loop, ws):
    junk = Reply(body=b'{"default_generation_settings": {"n_ctx": -5}, "n_ctx": "2048 tokens"}')
    with FakeServer([text("hello")], props=junk, models=[{"id": "m", "max_model_len": 10 ** 15}]) as srv:
        proc, out = run(run_loop, srv, ws)
        assert proc.returncode == 0 and session(out)["ctx_size"] == 16384, proc.stderr


def test_a_small_flag_window_is_capped_too(run_loop, ws):
    with FakeServer([text("hello")]) as srv:
        run(run_loop, srv, ws, "--ctx-size", "3000")
        assert srv.requests[0]["max_tokens"] == 952 and srv.gets == []  # the prompt keeps 2,048
        assert srv.requests[0]["messages"][0]["content"].startswith(COMPACT_RULES)


def test_a_window_of_4096_keeps_the_full_prompt_and_half_for_the_reply(run_loop, ws):
    with FakeServer([text("hello")], props={"n_ctx": 4096}) as srv:
        run(run_loop, srv, ws)
        assert srv.requests[0]["max_tokens"] == 2048  # half the window, as the context manager reserves
        assert srv.requests[0]["messages"][0]["content"].startswith(RULES)
