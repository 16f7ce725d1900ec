"""Sessions as a user meets them: a compacted session resumes compacted, a run that never got an
answer leaves nothing behind, interactive sessions are named from their first task, the listing lines up."""

from __future__ import annotations

import json
import re
from pathlib import Path

from loopagent.context import SUMMARY_HEADER
from tests.conftest import clean_env, where_shells_run
from tests.context.test_context_e2e import SUMMARY, base_tokens, ctx_for, dispatch, write_lines
from tests.fakeserver import FakeServer, text, tools
from tests.pty import Terminal


def agent(run_loop, server, ws: Path, *extra: str):
    return run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                    *where_shells_run(), *extra)


def sessions(loop_home: Path) -> list[Path]:
    return sorted((loop_home / "sessions").glob("*/*.jsonl"))


def compacted_run(run_loop, server, tmp_path: Path) -> tuple[Path, str]:
    """A one-shot run over twelve files whose window forces a compaction; (workspace, its --ctx-size)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for k in range(12):
        write_lines(ws / f"f{k}.txt", 12, f"f{k}")
    task = "Summarise what the twelve files say."
    limit = base_tokens(run_loop, ws, task) + 1600
    turns = [tools(("read_file", {"path": f"f{k}.txt"})) for k in range(12)] + [text("They list balances.")]
    server.add(*[dispatch(turns)] * 20)
    ctx = ctx_for(limit)
    assert agent(run_loop, server, ws, "--ctx-size", ctx, task).returncode == 0
    return ws, ctx


def test_a_compacted_session_resumes_compacted(run_loop, server, tmp_path, loop_home):
    ws, ctx = compacted_run(run_loop, server, tmp_path)
    compactions = sum("tools" not in b for b in server.requests)
    assert compactions >= 1
    with FakeServer([text("They still list balances.")]) as again:
        proc = agent(run_loop, again, ws, "--ctx-size", ctx, "--resume", "last", "and the totals?")
        assert proc.returncode == 0, proc.stderr
        assert len(again.requests) == 1 and "tools" in again.requests[0]  # no new summary at once
        sent = again.requests[0]["messages"]
    assert sent[2] == {"role": "user", "content": f"{SUMMARY_HEADER}\n\n{SUMMARY}"}
    assert "f0 line 0:" not in json.dumps(sent)
    assert sent[-1] == {"role": "user", "content": "and the totals?"}


def test_a_run_refused_before_the_first_answer_leaves_no_session(run_loop, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeServer() as closed:
        url = closed.url
    proc = run_loop("agent", "-C", str(ws), "--base-url", url, "--json", "hello", env={"LOOP_RETRIES": "0"})
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["status"] == "error"
    assert sessions(loop_home) == []
    assert not list((loop_home / "sessions").glob("*/*.lock"))
    assert "no saved sessions" in run_loop("sessions", "-C", str(ws)).stdout


def test_a_run_with_an_answer_that_then_fails_keeps_its_session(run_loop, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    server.add(tools(("read_file", {"path": "a.txt"})))  # then the script runs out: a server error
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "read a", env={"LOOP_RETRIES": "0"})
    assert proc.returncode == 1
    assert len(sessions(loop_home)) == 1  # there is something to resume


def test_the_sessions_listing_is_aligned(run_loop, server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    for task in ("a", "a much longer task with many words in it"):
        server.add(text("ok"))
        assert agent(run_loop, server, ws, task).returncode == 0
    listed = run_loop("sessions", "-C", str(ws))
    lines = listed.stdout.splitlines()
    assert len(lines) == 2
    columns = [[m.start() for m in re.finditer(r"(?<=  )\S", line)] for line in lines]
    assert columns[0][:3] == columns[1][:3], lines  # time, steps and status start where they start above


def repl(server, ws: Path, loop_home: Path, *args: str) -> Terminal:
    env = clean_env(loop_home)
    env.update(TERM="xterm", COLUMNS="120", LINES="40")
    return Terminal(["agent", "-C", str(ws), "--base-url", server.url, *args], env, ws)


def test_an_interactive_session_is_named_from_its_first_task(server, tmp_path, loop_home):
    ws = tmp_path / "ws"
    ws.mkdir()
    server.add(text("hi there"))
    t = repl(server, ws, loop_home)
    try:
        t.prompt()
        t.line("Explain the ledger module")
        t.expect(r"done: completed")
        t.prompt()
        t.line("/exit")
        assert t.exit_code() == 0
    finally:
        t.child.close(force=True)
    (path,) = sessions(loop_home)
    assert path.stem.endswith("-explain-the-ledger-module"), path
    assert not list(path.parent.glob("*.lock"))
    first = json.loads(path.read_text().splitlines()[0])
    assert first["id"] != path.stem  # the header keeps the name it started with; the file is what counts


def test_an_interactive_resume_of_a_compacted_session_does_not_summarise_again(run_loop, server, tmp_path,
                                                                              loop_home):
    ws, ctx = compacted_run(run_loop, server, tmp_path)
    with FakeServer([text("They still list balances.")]) as again:
        t = repl(again, ws, loop_home, "--ctx-size", ctx, "--resume", "last")
        try:
            t.expect(r"context \S+/\S+")
            t.line("and the totals?")
            t.expect(r"done: completed")
            t.line("/exit")
            assert t.exit_code() == 0
        finally:
            t.child.close(force=True)
        assert len(again.requests) == 1 and "tools" in again.requests[0]
        assert again.requests[0]["messages"][2]["content"].startswith(SUMMARY_HEADER)
