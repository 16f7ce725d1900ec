"""Session files in-process: writer, loader and repair rules, lookup by id/prefix/path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopagent.events import Compacted, MessageAdded, RunEnd
from loopagent.messages import AssistantMessage, SystemMessage, ToolCall, ToolResult, Usage, UserMessage
from loopagent.session import SessionError, SessionWriteError, SessionWriter, find, header, load, new_path
from loopagent.session.catalog import workspace_key
from loopagent.session.writer import public_url

CALL = ToolCall("c1", "edit_file", '{"path": "a.py", "old_string": "x", "new_string": "y"}')
HISTORY = [
    SystemMessage("You are loop."),
    UserMessage("fix ünïcode \"quotes\"\nand newlines"),
    AssistantMessage(text="", thinking="hmm", tool_calls=(CALL, ToolCall("c2", "shell", "not json")),
                     stop_reason="tool_calls", usage=Usage(120, 7)),
    ToolResult("c1", "edit_file", "edited a.py", display="--- a.py\n+++ a.py\n"),
    ToolResult("c2", "shell", "exit code 1\nboom", is_error=True),
    AssistantMessage(text="Done.", usage=Usage(200, 3)),
]


def write_session(tmp_path: Path, messages: list, end: bool = True) -> Path:
    path = new_path(tmp_path / "home", tmp_path, "a task")
    writer = SessionWriter.create(path, header(path.stem, tmp_path, "m", "http://127.0.0.1:1/v1", "a task"))
    for i, msg in enumerate(messages):
        writer(MessageAdded(msg, i))
    if end:
        writer(RunEnd("completed", 2, Usage()))
    writer.close()
    return path


def test_messages_round_trip_exactly(tmp_path):
    path = write_session(tmp_path, HISTORY)
    loaded = load(path)
    assert loaded.history == HISTORY and loaded.repairs == [] and loaded.missing == []
    assert loaded.valid_size == path.stat().st_size


def test_unanswered_calls_of_the_last_reply_get_error_results_in_call_order(tmp_path):
    path = write_session(tmp_path, HISTORY[:3], end=False)
    loaded = load(path)
    assert [r.call_id for r in loaded.missing] == ["c1", "c2"]
    assert all(r.is_error and "session ended before this call finished" in r.content for r in loaded.missing)
    assert len(loaded.repairs) == 2 and "c1" in loaded.repairs[0].text


def test_a_missing_result_before_a_later_reply_is_corruption(tmp_path):
    path = write_session(tmp_path, [*HISTORY[:4], AssistantMessage(text="skipped c2")])
    with pytest.raises(SessionError, match=r"line 4: tool call c2 has no result"):
        load(path)


def test_a_gap_in_message_indexes_is_corruption(tmp_path):
    path = write_session(tmp_path, HISTORY)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3] + lines[4:]))  # message 2 lost
    with pytest.raises(SessionError, match=r"line 4: message index 3, expected 2"):
        load(path)


def test_a_whole_last_line_without_its_newline_is_kept(tmp_path):
    path = write_session(tmp_path, HISTORY, end=False)
    path.write_bytes(path.read_bytes()[:-1])
    loaded = load(path)
    assert loaded.history == HISTORY and loaded.repairs == []
    writer = SessionWriter.reopen(path, loaded.valid_size)
    writer(RunEnd("completed", 1, Usage()))
    writer.close()
    assert [json.loads(line)["type"] for line in path.read_text().splitlines()][-2:] == ["message", "end"]


def test_a_torn_header_is_not_a_session(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"type":"header","sch')
    with pytest.raises(SessionError, match="no session header"):
        load(path)


def test_a_newer_schema_is_refused(tmp_path):
    path = write_session(tmp_path, HISTORY)
    text = path.read_text().replace('"schema":1', '"schema":99', 1)
    path.write_text(text)
    with pytest.raises(SessionError, match="upgrade loop"):
        load(path)


def test_compactions_are_recorded_and_loaded(tmp_path):
    path = new_path(tmp_path / "home", tmp_path, "t")
    writer = SessionWriter.create(path, header(path.stem, tmp_path, "m", "u", "t"))
    event = Compacted("the summary", 3, 9000, 1200, Usage(50, 20), focus="tests")
    writer(MessageAdded(SystemMessage("s"), 0))
    writer(event)
    writer.close()
    assert load(path).compacted == [event]


def test_write_failure_is_recorded_not_raised(tmp_path):
    writer = SessionWriter(Path("/dev/full"), __import__("os").open("/dev/full", __import__("os").O_WRONLY))
    writer(MessageAdded(UserMessage("x"), 0))  # a listener never raises: the loop asks `health`
    assert "/dev/full" in writer.health()
    with pytest.raises(SessionWriteError, match="/dev/full"):
        SessionWriter(Path("/dev/full"), __import__("os").open("/dev/full", __import__("os").O_WRONLY)).write({})
    writer(RunEnd("error", 0, Usage()))
    writer.close()


def test_base_url_is_stored_without_credentials():
    assert public_url("https://user:pw@example.test:8443/v1?api_key=sk-1") == "https://example.test:8443/v1"
    assert public_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"


def test_workspace_key_is_readable_and_stable(tmp_path):
    ws = tmp_path / "My Project!"
    ws.mkdir()
    key = workspace_key(ws)
    assert key.startswith("my-project-") and len(key.rsplit("-", 1)[1]) == 8
    assert workspace_key(ws / ".." / "My Project!") == key
    assert workspace_key(tmp_path) != key


def test_find_last_id_prefix_path_and_ambiguity(tmp_path):
    home = tmp_path / "home"
    paths = []
    for task in ["alpha task", "beta task"]:
        path = new_path(home, tmp_path, task)
        SessionWriter.create(path, header(path.stem, tmp_path, "m", "u", task)).close()
        paths.append(path)
    assert find(home, tmp_path, "last") == paths[1]
    assert find(home, tmp_path, paths[0].stem) == paths[0]
    assert find(home, tmp_path, str(paths[0])) == paths[0]
    assert find(home, tmp_path, paths[0].stem[:-4]) == paths[0]
    with pytest.raises(SessionError, match="ambiguous"):
        find(home, tmp_path, paths[0].stem[:8])
    with pytest.raises(SessionError, match="no session"):
        find(home, tmp_path, "zzz")
