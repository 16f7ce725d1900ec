"""`loop replay` under the recorded approval mode, and the person's recorded answers at the question."""

from __future__ import annotations

import json
from pathlib import Path

from loopagent.details import Details
from loopagent.loop import HEADLESS_DENIAL
from loopagent.messages import AssistantMessage, SystemMessage, ToolCall, ToolResult, UserMessage, to_record
from loopagent.rerun import USER_DENIAL
from loopagent.session import header
from loopagent.session.catalog import sessions_dir
from tests.cli.test_replay import replay_here
from tests.conftest import where_shells_run


def session_file(path: Path, ws: Path, approval: str | None, messages: list) -> Path:
    head = header(path.stem, ws, "default", "http://127.0.0.1:9/v1", "run it")
    if approval:
        head["approval"] = approval
    lines = [head] + [{"type": "message", "index": i, **to_record(m)} for i, m in enumerate(messages)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def own_session(loop_home: Path, ws: Path, name: str, approval: str | None, messages: list) -> Path:
    """A session in the user's own store: its recorded mode and answers are the user's (a file handed
    over by someone else runs no looser than the configuration: tests/cli/test_replay_hostile_session.py)."""
    store = sessions_dir(loop_home, ws)
    store.mkdir(parents=True, exist_ok=True)
    return session_file(store / f"{name}.jsonl", ws, approval, messages)


def shell_turn(call_id: str, command: str) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(call_id, "shell", json.dumps({"command": command})),),
                            stop_reason="tool_calls")


def setup(tmp_path: Path, loop_home: Path, config: dict) -> Path:
    loop_home.mkdir(parents=True, exist_ok=True)
    extra = {"sandbox": "off"} if where_shells_run() else {}
    (loop_home / "config.json").write_text(json.dumps({**config, **extra}))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    return ws


def test_headless_recording_replays_under_its_mode(tmp_path: Path, loop_home: Path, monkeypatch, capsys) -> None:
    # Recorded headless under `edits`: the shell call was denied. The user's config now says `all`.
    ws = setup(tmp_path, loop_home, {"approval": "all"})
    denied = ToolResult.error(f"{HEADLESS_DENIAL} (runs a command)", Details("denied"))
    messages = [SystemMessage("s"), UserMessage("run it"), shell_turn("c1", "exit 3"),
                denied.answering(ToolCall("c1", "shell", "{}")), AssistantMessage(text="could not run it")]
    recorded = own_session(loop_home, ws, "rec", "edits", messages)
    code, out, err = replay_here(monkeypatch, capsys, ws, str(recorded))
    assert code == 0, out + err
    assert "has no checkpoint" in err  # no checkpoint: a copy of the workspace as it is now
    assert out.splitlines()[1].split()[-3:] == ["denied", "denied", "same"]
    # Without a recorded mode the configuration's `all` runs the command: call 1 diverges.
    bare = own_session(loop_home, ws, "bare", None, messages)
    code, out, err = replay_here(monkeypatch, capsys, ws, str(bare))
    assert code == 1 and "recorded denied, now exit 3" in out.splitlines()[-1]
    assert not (ws / "nothing").exists()


def test_recorded_answers_at_the_question(tmp_path: Path, loop_home: Path, monkeypatch, capsys) -> None:
    # Recorded in a terminal under `ask`: the first command approved (it exited 3), the second refused.
    ws = setup(tmp_path, loop_home, {})
    ran = ToolResult.error("exit code 3\n", Details("error", exit_code=3, lines=0))
    refused = ToolResult.error(USER_DENIAL, Details("denied"))
    messages = [SystemMessage("s"), UserMessage("run it"),
                shell_turn("c1", "exit 3"), ran.answering(ToolCall("c1", "shell", "{}")),
                shell_turn("c1", "touch made"), refused.answering(ToolCall("c1", "shell", "{}")),
                AssistantMessage(text="done"), UserMessage("once more"),
                shell_turn("c2", "exit 4"), ToolResult.error("exit code 4\n", Details("error", exit_code=4))
                .answering(ToolCall("c2", "shell", "{}")), AssistantMessage(text="done again")]
    recorded = own_session(loop_home, ws, "rec", "ask", messages)
    code, out, err = replay_here(monkeypatch, capsys, ws, str(recorded))
    assert code == 0, out + err
    rows = [line.split() for line in out.splitlines()[1:4]]
    assert [r[-3:] for r in rows] == [["exit", "3", "same"], ["denied", "denied", "same"], ["exit", "4", "same"]]
    assert not (ws / "made").exists()
