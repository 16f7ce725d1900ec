"""A `task` child's session file: under its parent in `loop sessions --tree`, and never what `--resume last`
continues (it is the parent's part, though created after it)."""

from __future__ import annotations

import time
from pathlib import Path

from loopagent.run.record import describe_tree
from loopagent.session import SessionWriter, header, listing, new_path
from loopagent.session.catalog import find


def session(home: Path, ws: Path, task: str, parent: dict | None = None) -> str:
    path = new_path(home, ws, task)
    head = header(path.stem, ws, "m", "http://127.0.0.1:1/v1", task, parent, "plan")
    SessionWriter.create(path, head).close()
    return path.stem


def test_a_child_sits_under_its_parent_and_is_not_the_last_session(tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    parent = session(home, ws, "look at the parser")
    time.sleep(0.002)  # the headers' creation times order the listing
    child = session(home, ws, "task find the parser", {"session": parent, "message": 2, "agent": "explore"})
    assert listing(home, ws)[0].id == child  # the newest file ...
    assert find(home, ws, "last").stem == parent  # ... but the parent is what `--resume last` continues
    lines = describe_tree(listing(home, ws))
    assert lines[0].startswith(parent) and lines[1].startswith(f" └ {child}")
    assert lines[1].endswith("(task explore at msg 2)")
    fork = session(home, ws, "again", {"session": parent, "message": 1})
    assert find(home, ws, "last").stem == fork  # a fork is a session of its own
    assert any(line.endswith("(at msg 1)") and fork in line for line in describe_tree(listing(home, ws)))


def test_a_hostile_agent_name_in_a_header_is_dropped(tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    parent = session(home, ws, "p")
    session(home, ws, "c", {"session": parent, "message": 0, "agent": "\x1b]0;pwned\x07"})
    lines = describe_tree(listing(home, ws))
    assert not any("\x1b" in line or "task " in line for line in lines)
