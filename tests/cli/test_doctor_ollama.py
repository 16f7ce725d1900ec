"""`loop doctor --provider ollama`: probed through the native client against a fake Ollama server."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakeollama import FakeOllama, OllamaReply, error, text, tool_lines, tools

READ = ("read_file", {"path": "README.md"})
SHOW = {"model_info": {"general.architecture": "llama", "llama.context_length": 32768}}


def unstreamed_call() -> OllamaReply:
    """A `stream: false` reply: one JSON object holding the whole message."""
    lines = tool_lines(READ)
    return OllamaReply(body=json.dumps({**lines[-1], "message": lines[0]["message"]}).encode(),
                       content_type="application/json")


def test_ollama_is_probed_natively(run_loop, tmp_path: Path, loop_home: Path):
    with FakeOllama([text("ok"), tools(READ), unstreamed_call()], show=SHOW, models=["qwen3:0.6b"]) as srv:
        proc = run_loop("doctor", "-C", str(tmp_path), "--provider", "ollama", "--base-url", srv.url,
                        "-m", "qwen3:0.6b", timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "GET /api/tags" in proc.stdout and "qwen3:0.6b" in proc.stdout
    assert "32768" in proc.stdout and "Ollama /api/show" in proc.stdout
    assert srv.paths.count("POST /api/chat") == 4 and "GET /api/tags" in srv.paths  # 4th: a schema's `format`
    assert [r["stream"] for r in srv.requests] == [True, True, False, True]
    assert all(r["options"]["num_predict"] <= 64 for r in srv.requests)
    saved = json.loads((loop_home / "servers.json").read_text())["servers"]
    assert saved[f"ollama {srv.url} qwen3:0.6b"]["ctx_size"] == 32768


def test_a_model_ollama_does_not_have_says_how_to_get_it(run_loop, tmp_path: Path):
    missing = "model 'qwen3:0.6b' not found"
    with FakeOllama([error(404, missing), error(404, missing), error(404, missing)], models=["llama3.2"]) as srv:
        proc = run_loop("doctor", "-C", str(tmp_path), "--provider", "ollama", "--base-url", srv.url,
                        "-m", "qwen3:0.6b", timeout=60)
    assert proc.returncode == 1
    assert "'qwen3:0.6b' not among them" in proc.stdout
    assert "ollama pull qwen3:0.6b" in proc.stdout and "verdict: loop cannot work" in proc.stdout
