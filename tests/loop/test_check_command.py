"""`--check CMD` against the fake server: the check decides whether the task is done.

A failing check's output goes back to the model (at most --check-retries times); the run ends
`completed` only when it passes, else `check_failed` (exit 5). The check runs like the shell tool:
in the workspace, sandboxed where the sandbox works, killed whole at its timeout.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.conftest import where_shells_run
from tests.fakeserver import FakeServer, text, tools, user_texts
from tests.loop.test_signals_headless import marked

BUGGY = "def add(a, b):\n    return a - b\n"
TEST = (
    "import sys\nfrom calc import add\n"
    "got = add(2, 3)\n"
    "if got != 5:\n    print(f'FAIL: add(2, 3) returned {got}, expected 5')\n    sys.exit(1)\n"
    "print('ok')\n"
)
CHECK = "python3 test_calc.py"


def project(tmp_path: Path) -> Path:
    ws = tmp_path / "proj"
    ws.mkdir()
    (ws / "calc.py").write_text(BUGGY)
    (ws / "test_calc.py").write_text(TEST)
    return ws


def lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def agent(run_loop, server: FakeServer, ws: Path, *extra: str, env: dict | None = None, timeout: float = 60):
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                    *where_shells_run(), *extra, "fix add", env=env, timeout=timeout)
    return proc, lines(proc.stdout)


def test_a_model_that_fixes_the_bug_after_seeing_the_check_output_completes(tmp_path, run_loop, loop_home):
    ws = project(tmp_path)
    with FakeServer([
        tools(("write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a * b + 0\n"})),
        text("Fixed: add now adds."),  # it does not: the check says so
        tools(("write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"})),
        text("Fixed for real."),
    ]) as server:
        proc, events = agent(run_loop, server, ws, "--check", CHECK)
    assert proc.returncode == 0, proc.stderr
    checks = [e for e in events if e["type"] == "check"]
    assert [(c["passed"], c["exit_code"], c["attempt"]) for c in checks] == [(False, 1, 1), (True, 0, 2)]
    assert checks[0]["command"] == CHECK and "returned 6, expected 5" in checks[0]["output"]
    # the model saw the check's output in the request after its first final answer
    told = user_texts(server.requests[2])[-1]
    assert told.startswith(f"The check `{CHECK}` failed with exit 1: FAIL: add(2, 3) returned 6, expected 5")
    assert events[-1]["type"] == "result" and events[-1]["status"] == "completed"
    assert events[-1]["check"] == {"command": CHECK, "passed": True, "attempts": 2}
    # the session file records both outcomes and the summary in its end record
    session = Path(next(e for e in events if e["type"] == "session")["path"])
    records = [json.loads(line) for line in session.read_text().splitlines()]
    assert [r["passed"] for r in records if r["type"] == "check"] == [False, True]
    assert records[-1]["type"] == "end" and records[-1]["check"]["attempts"] == 2


def test_a_model_that_never_fixes_it_ends_check_failed_after_the_retries(tmp_path, run_loop):
    ws = project(tmp_path)
    with FakeServer([text("Done."), text("Done, really."), text("It is done."), text("never asked")]) as server:
        proc, events = agent(run_loop, server, ws, "--check", CHECK)
    assert proc.returncode == 5, proc.stderr
    assert [c["attempt"] for c in events if c["type"] == "check" and not c["passed"]] == [1, 2, 3]
    assert len(server.requests) == 3  # the first answer and 2 retries; the third failure ends the run
    for request in server.requests[1:]:
        assert any(t.startswith(f"The check `{CHECK}` failed with exit 1: FAIL: add(2, 3) returned -1")
                   for t in user_texts(request))
    result = events[-1]
    assert result["status"] == "check_failed" and result["check"] == {"command": CHECK, "passed": False,
                                                                        "attempts": 3}
    assert (ws / "calc.py").read_text() == BUGGY


def test_a_check_that_times_out_is_killed_and_fails(tmp_path, run_loop):
    ws = project(tmp_path)
    marker = f"check-marker-{time.monotonic_ns()}"
    with FakeServer([text("Done.")]) as server:
        begun = time.monotonic()
        proc, events = agent(run_loop, server, ws, "--check", f"echo started; sleep 30 # {marker}",
                             "--check-retries", "0", env={"LOOP_CHECK_TIMEOUT": "1"})
        took = time.monotonic() - begun
    assert proc.returncode == 5, proc.stderr
    (check,) = [e for e in events if e["type"] == "check"]
    assert check["timed_out"] and check["exit_code"] is None and not check["passed"]
    assert "started" in check["output"]
    assert took < 15  # 1 s of check, not 30
    assert marked(marker) == []  # the check's processes did not outlive it


def test_a_project_file_cannot_set_the_check_but_loop_check_can(tmp_path, run_loop):
    ws = project(tmp_path)
    (ws / ".loop").mkdir()
    (ws / ".loop" / "config.json").write_text(json.dumps({"check": "touch pwned"}))
    with FakeServer([text("Done.")]) as server:
        proc, events = agent(run_loop, server, ws, env={"LOOP_CHECK": "test -f calc.py"})
    assert proc.returncode == 0, proc.stderr
    assert 'ignored "check"' in proc.stderr and "config.json" in proc.stderr
    assert not (ws / "pwned").exists()
    assert [(c["command"], c["passed"]) for c in events if c["type"] == "check"] == [("test -f calc.py", True)]
