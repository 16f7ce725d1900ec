"""A parent's export holds each `task` child's transcript, nested under the result of the call that started
it: marked with its agent, its steps and tokens, escaped like every other part of an export. A child file
that is missing, unreadable, not the parent's, or named by a hostile id is one line, never a failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopagent.details import Details
from loopagent.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
    to_record,
)
from loopagent.session import SessionWriter, header
from tests.cli.test_export_viewers import FRAGMENTS, JS, MD_REPLY, XSS, Page, assert_inert, viewed
from tests.fakeserver import text, tools

PARENT = "20260101T000000Z-look-at-the-parser"
CHILD = "20260101T000001Z-task-find-the-parser"
CHILD_WORDS = "CHILD-PROMPT-4417"


def write(path: Path, messages: list, parent: dict | None = None, end: dict | None = None) -> Path:
    """A session file through the real writer: its messages, then its end record."""
    writer = SessionWriter.create(path, header(path.stem, Path("/tmp/ws"), "m", "http://127.0.0.1:1/v1",
                                               "look at the parser", parent, "plan" if parent else "all"))
    for index, message in enumerate(messages):
        writer.write({"type": "message", "index": index, **to_record(message)})
    writer.write(end or {"type": "end", "status": "completed", "steps": 2, "message": "", "time": "t"})
    writer.close()
    return path


def parent_session(directory: Path, *children: str) -> Path:
    """A parent whose one reply starts a task per child id (each result naming that child's session)."""
    calls = [ToolCall(f"call_{n}", "task", json.dumps({"description": f"find {n}", "prompt": CHILD_WORDS}))
             for n in range(len(children))]
    results = [ToolResult.ok(f"found it\n\n[task explore: completed; child session {c}]",
                             details=Details(session=c, steps=2, prompt_tokens=30, completion_tokens=5)).answering(call)
               for call, c in zip(calls, children, strict=True)]
    messages = [SystemMessage("sys"), UserMessage("look at the parser"),
                AssistantMessage(text="", tool_calls=tuple(calls), stop_reason="tool_calls"), *results,
                AssistantMessage(text="PARENT-FINAL-ANSWER", usage=Usage(10, 2))]
    return write(directory / f"{PARENT}.jsonl", messages)


def child_session(directory: Path, text: str = "parser.py:12 holds it", parent: str = PARENT,
                  name: str = CHILD, agent: str = "explore") -> Path:
    read = ToolCall("c1", "read_file", '{"path": "parser.py"}')
    messages = [SystemMessage("child sys"), UserMessage(CHILD_WORDS),
                AssistantMessage(text="", tool_calls=(read,), stop_reason="tool_calls", usage=Usage(20, 3)),
                ToolResult.ok("def parse(): ...").answering(read), AssistantMessage(text=text, usage=Usage(25, 4))]
    return write(directory / f"{name}.jsonl", messages, {"session": parent, "message": 2, "agent": agent})


def test_the_childs_transcript_is_nested_under_its_call_in_md_and_html(tmp_path):
    from loopagent.export import export

    child_session(tmp_path)
    md = export(parent_session(tmp_path, CHILD), "md")
    result, marked, prompt, answer, ended, final = (md.index(s) for s in (
        "**result** of `task`", "> **child agent** `explore`, session `" + CHILD + "`", f"> {CHILD_WORDS}",
        "> parser.py:12 holds it", "> **child agent explore ended**", "PARENT-FINAL-ANSWER"))
    assert result < marked < prompt < answer < ended < final  # under the call, before the parent goes on
    assert "> ### Assistant" in md and "> ## Assistant" not in md  # a level below the parent's headings
    assert "completed; 2 model replies, 1 tool call (0 failed), 45 prompt + 7 completion tokens" in md
    assert "**child agents**: 2 model replies, 1 tool call (0 failed), 45 prompt + 7 completion tokens" in md

    page = Page(export(tmp_path / f"{PARENT}.jsonl", "html"))
    inside = page.inside("section")
    assert CHILD_WORDS in inside and "parser.py:12 holds it" in inside and "def parse(): ..." in inside
    assert "User" in page.inside("h4") and "User" in page.inside("h3")  # the child's, a level below
    sections = [attrs.get("class") for tag, attrs in page.tags if tag == "section"]
    assert sections.count("child") == 1
    text = page.text()
    assert text.index("result of task") < text.index("def parse(): ...") < text.index("PARENT-FINAL-ANSWER")
    assert "45 prompt + 7 completion tokens" in text


def test_a_child_exported_alone_names_the_session_that_started_it(tmp_path):
    from loopagent.export import export

    md = export(child_session(tmp_path), "md")
    assert f"- **started by**: {PARENT} (its task call to agent explore at message 2)" in md
    assert "forked from" not in md


def test_a_hostile_child_is_as_inert_as_any_message(tmp_path):
    from loopagent.export import export

    child_session(tmp_path, text=f"{MD_REPLY}\n{XSS} {JS} \x1b]52;c;ZXZpbA==\x07 ```\n</section><script>x</script>")
    parent = parent_session(tmp_path, CHILD)
    md = export(parent, "md")
    assert "\x1b" not in md and "\x07" not in md
    page = viewed(md)
    assert_inert(page)
    assert XSS in page.text() and JS in page.text() and "bold" in page.inside("strong")  # kept, only inert

    html = Page(export(parent, "html"))
    assert not {"script", "img", "iframe"} & html.names
    for tag, attrs in html.tags:
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        assert not [v for v in attrs.values() if v and "javascript:" in v.lower()], (tag, attrs)
    assert "</section><script>x</script>" in html.text()
    assert [attrs.get("class") for tag, attrs in html.tags if tag == "section"].count("child") == 1


def unreadable(tmp_path: Path) -> str:
    path = child_session(tmp_path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    return CHILD


def mistyped(tmp_path: Path) -> str:  # an edited file: JSON, but a dict where the answer's text belongs
    path = child_session(tmp_path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[-2]["text"] = {"a": 1}
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return CHILD


def a_directory(tmp_path: Path) -> str:
    (tmp_path / f"{CHILD}.jsonl").mkdir()
    return CHILD


def anothers(tmp_path: Path) -> str:
    child_session(tmp_path, parent="20250101T000000Z-someone-else")
    return CHILD


def not_a_child(tmp_path: Path) -> str:
    write(tmp_path / f"{CHILD}.jsonl", [SystemMessage("s"), UserMessage("a session of its own")])
    return CHILD


def outside(tmp_path: Path) -> str:  # a session file elsewhere, named by a path-like id
    (tmp_path / "elsewhere").mkdir()
    child_session(tmp_path / "elsewhere", text="MUST-NOT-SHOW")
    return f"elsewhere/{CHILD}"


@pytest.mark.parametrize(("make", "why"), [
    (lambda tmp: CHILD, "not found beside this session"),
    (unreadable, f"unreadable: corrupt session file {CHILD}.jsonl line 2"),
    (mistyped, f"unreadable: corrupt session file {CHILD}.jsonl line 6: malformed message (text is not of its type)"),
    (a_directory, "not found beside this session"),
    (anothers, "its header does not name this session as its parent"),
    (not_a_child, "its header does not name this session as its parent"),
    (outside, "not a session id"),
    (lambda tmp: "../" + CHILD, "not a session id"),
    (lambda tmp: PARENT, "shown once only, above"),  # a result naming the parent itself: no loop
])
def test_a_child_that_cannot_be_shown_is_one_line(tmp_path, make, why):
    from loopagent.export import export

    session = make(tmp_path)
    path = parent_session(tmp_path, session)
    md = export(path, "md")
    lines = [line for line in md.splitlines() if "child agent" in line]
    assert len(lines) == 1 and why in lines[0], lines
    assert "MUST-NOT-SHOW" not in md and "PARENT-FINAL-ANSWER" in md and "## Result" in md
    html = export(path, "html")
    assert why in Page(html).inside("p") and "MUST-NOT-SHOW" not in html


def test_one_child_named_twice_is_shown_once_and_a_forks_children_are_its_own(tmp_path):
    from loopagent.export import export

    child_session(tmp_path)
    md = export(parent_session(tmp_path, CHILD, CHILD), "md")
    assert md.count("> **child agent** `explore`") == 1 and "shown once only, above" in md
    # a fork keeps the task results of the session it was forked from: their children are shown under it
    fork = tmp_path / "20260101T000009Z-look-at-the-parser-2.jsonl"
    lines = (tmp_path / f"{PARENT}.jsonl").read_text().splitlines()
    head = json.loads(lines[0]) | {"id": fork.stem, "parent": {"session": PARENT, "message": 3}}
    fork.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    assert "> **child agent** `explore`" in export(fork, "md")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join))
def test_no_text_in_a_quoted_child_becomes_a_tag_or_a_link(text):
    from loopagent.export.markdown import code, inline, prose, quoted

    assert_inert(viewed("\n".join(quoted([prose(text), "", f"**x** {code(text)}: {inline(text)}"]))))


def test_a_real_parent_run_exports_its_child_and_still_resumes(run_loop, server, workspace, tmp_path):
    from tests.tools.test_task_e2e import events, is_child, responder, run

    child_turns = iter([tools(("read_file", {"path": "a.txt"})), text("a.txt says HELLO-FROM-CHILD (line 1).")])
    server.respond = responder([tools(("task", {"description": "read a.txt", "prompt": "What does a.txt say?"})),
                                text("PARENT-SAYS-DONE")], lambda body: next(child_turns))
    proc = run(run_loop, server, workspace, "--approval", "all", task="look at a.txt")
    assert proc.returncode == 0, proc.stderr
    started = [e for e in events(proc.stdout) if e["type"] == "session"]
    parent = started[0]["id"]
    [result] = [e for e in events(proc.stdout) if e["type"] == "tool_result"]
    child = result["content"].rsplit("child session ", 1)[1].rstrip("]")

    md = run_loop("export", "last", cwd=workspace)  # `last` is the parent, though the child's file is newer
    assert md.returncode == 0, md.stderr
    out = md.stdout
    assert out.startswith(f"# Session {parent}")
    steps = [out.index(s) for s in ("**result** of `task`", f"> **child agent** `explore`, session `{child}`",
                                    "> **result** of `read_file`: ok", "> a.txt says HELLO-FROM-CHILD",
                                    "> **child agent explore ended**: completed; 2 model replies", "PARENT-SAYS-DONE")]
    assert steps == sorted(steps), out
    html = run_loop("export", "last", "-o", str(tmp_path / "t.html"), cwd=workspace)
    assert html.returncode == 0, html.stderr
    page = Page((tmp_path / "t.html").read_text())
    assert "HELLO-FROM-CHILD" in page.inside("section") and "explore" in page.inside("code")

    # --resume last continues the parent, with its own history: none of the child's messages
    server.respond = lambda body: text("RESUMED")
    resumed = run(run_loop, server, workspace, "--approval", "all", "--resume", "last", task="and now?")
    assert resumed.returncode == 0, resumed.stderr
    assert next(e["id"] for e in events(resumed.stdout) if e["type"] == "session") == parent
    last = server.requests[-1]
    assert not is_child(last) and last["messages"][-1]["content"] == "and now?"
    roles = [m["role"] for m in last["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"], roles
    assert "HELLO-FROM-CHILD" in json.dumps(last["messages"][3]) and "read_file" not in json.dumps(last["messages"][1:])


@pytest.mark.parametrize(("line", "change", "wrong"), [  # line 4 is the child's first reply, 5 its result
    (4, {"tool_calls": [{"id": {}, "name": "r", "arguments": "{}"}]}, "tool_calls"),
    (4, {"usage": {"prompt_tokens": "many", "completion_tokens": 1}}, "usage"), (4, {"thinking": 7}, "thinking"),
    (5, {"call_id": None}, "call_id"), (5, {"content": ["a list"]}, "content"),
])
def test_a_message_with_a_field_of_the_wrong_type_is_a_corrupt_line(tmp_path, line, change, wrong):
    from loopagent.errors import SessionError
    from loopagent.session import load

    path = child_session(tmp_path)
    lines = [json.loads(text) for text in path.read_text().splitlines()]
    lines[line - 1] |= change
    path.write_text("".join(json.dumps(record) + "\n" for record in lines))
    with pytest.raises(SessionError, match=rf"line {line}: malformed message \({wrong} is not of its type\)"):
        load(path)
