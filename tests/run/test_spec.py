"""The run's typed facts (run/spec.py, run/discovery.py): flags as given, each setting's origin, the context
size with its origin and what to say about it, read as fields and never parsed back out of a label."""

from __future__ import annotations

import json
from pathlib import Path

from loopagent.config import load_config
from loopagent.run.build import Host
from loopagent.run.discovery import Window, fit
from loopagent.run.spec import Flags


def test_flags_given_are_the_command_lines_layer_and_never_show_the_key():
    flags = Flags(api_key="sk-canary-123", ctx_size=2048, mcp_servers={}, checkpoints=False)
    assert flags.given() == {"api_key": "sk-canary-123", "ctx_size": 2048, "mcp_servers": {}, "checkpoints": False}
    assert "sk-canary-123" not in repr(flags)


def test_each_settings_origin_is_a_fact(tmp_path: Path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    (ws / ".loop").mkdir(parents=True)
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"max_steps": 7}))
    (ws / ".loop" / "config.json").write_text(json.dumps({"max_steps": 5}))
    env = {"LOOP_HOME": str(home), "LOOP_MODEL": "m"}
    config = load_config(ws, Flags(ctx_size=9000).given(), env)
    assert (config.origins["ctx_size"], config.origins["model"], config.origins["max_steps"]) == ("flag", "env", "project")
    assert "approval" not in config.origins  # a default has no origin of its own
    assert load_config(ws, {}, {**env, "LOOP_CTX_SIZE": "9000"}).origins["ctx_size"] == "env"


def test_fit_returns_the_window_and_leaves_the_config_as_loaded(tmp_path: Path):
    host = Host(env={}, home=tmp_path / "home", cwd=tmp_path)
    config = load_config(tmp_path, {"ctx_size": 2048, "max_tokens": 4096}, {"LOOP_HOME": str(host.home)})
    fitted = fit(config, host)
    assert fitted.window == Window(2048, "flag", "command line")
    assert (fitted.window.source, fitted.window.label) == ("flag", "command line")
    assert fitted.settings.max_tokens < 4096 and fitted.asked_max_tokens == 4096
    assert (config.settings.ctx_size, config.settings.max_tokens) == (2048, 4096)
    assert "capped" not in config.sources["max_tokens"]


def test_a_windows_notes_and_label_come_from_its_fields():
    settings = load_config(Path("/nonexistent"), {"ctx_size": 32768}, {"LOOP_HOME": "/nonexistent"}).settings
    fresh = Window(32768, "server", "llama.cpp /props at http://127.0.0.1:1/props")
    kept = Window(32768, "server", "llama.cpp /props", kept=True)
    assert fresh.notes(settings) == ["context size 32,768 tokens, from llama.cpp /props at http://127.0.0.1:1/props"]
    assert kept.notes(settings) == []  # told when it was learned
    assert kept.label == "server (llama.cpp /props, kept in servers.json)" and kept.source == "server"
    assert Window(16384, "default").label == "default" and Window(16384, "default").notes(settings) == []
    assert Window(9000, "project", "project file x line 2").source == "config"


def test_nothing_in_run_imports_from_cli():
    """run/ is what every front-end calls; it never reaches back up into one (at the top, lazily or for types)."""
    import ast

    import loopagent.run

    root = Path(loopagent.run.__file__).parent
    upward = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            upward += [(path.name, n) for n in names if n == "loopagent.cli" or n.startswith("loopagent.cli.")]
    assert len(list(root.glob("*.py"))) >= 10 and upward == []


def test_open_run_owns_the_session_lock_and_turns_run_through_it(tmp_path: Path):
    """One-shot through `open_run`, in process: the task's turn and a follow-up, the session locked while the
    run is open and released (its sidecar gone) when the block ends."""
    import io

    import httpx

    from loopagent.cancel import Cancel
    from loopagent.run.run import open_run
    from loopagent.run.spec import RunSpec
    from loopagent.session.lock import in_use, lock_path
    from tests.fakeserver import text_events

    answers = iter(["first answer", "second answer"])

    def model(request: httpx.Request) -> httpx.Response:
        body = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in text_events(next(answers)))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body + b"data: [DONE]\n\n")

    ws = tmp_path / "ws"
    ws.mkdir()
    host = Host(env={"PATH": "/usr/bin:/bin"}, home=tmp_path / "home", cwd=ws, out=io.StringIO(), err=io.StringIO(),
                transport=httpx.MockTransport(model))
    spec = RunSpec(task="say hi", workspace=ws, json=True, flags=Flags(sandbox="off", checkpoints=False, ctx_size=16384))
    with open_run(spec, host) as run:
        path = run.rec.path
        assert run.turn(None, Cancel()).status == "completed"
        assert run.turn("and again", Cancel()).status == "completed"
        assert in_use(path)  # this process holds the session while the run is open
    assert not lock_path(path).exists() and in_use(path) == ""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    said = [m.get("content", m.get("text")) for m in lines if m.get("type") == "message" and m.get("role") != "system"]
    assert said == ["say hi", "first answer", "and again", "second answer"]
