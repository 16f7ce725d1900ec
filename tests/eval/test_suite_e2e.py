"""`loop eval` end to end: a 4-task suite against the fake server answering per task (match on the prompt)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import clean_env, wait_for, where_shells_run
from tests.fakeserver import FakeServer, Reply, error, text, tools

SUITE = """
[[task]]
id = "fixed"
prompt = "TASK-FIX: make add() add"
repo = "repo"
check = "python -c 'import calc; assert calc.add(2, 3) == 5'"

[[task]]
id = "claimed"
prompt = "TASK-CLAIM: make add() add"
repo = "repo"
check = "python -c 'import calc; assert calc.add(2, 3) == 5'"

[[task]]
id = "steps"
prompt = "TASK-STEPS: look around"
repo = "repo"
max_steps = 2
check = "python -c 'import calc; assert calc.add(2, 3) == 5'"

[[task]]
id = "setup"
prompt = "TASK-SETUP: do what hint.txt says"
repo = "repo"
setup = "printf 'from setup: use a + b' > hint.txt"
check = "grep -q 'from setup' hint.txt && python -c 'import calc; assert calc.add(2, 3) == 5'"
"""
BROKEN = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "calc.py").write_text(BROKEN)
    path = tmp_path / "suite.toml"
    path.write_text(SUITE)
    return path


class Model:
    """Answers each run by the task tag in its prompt and the number of turns so far."""

    def __init__(self) -> None:
        self.fix_started = threading.Event()
        self.gate: threading.Event | None = None  # when set: TASK-STEPS waits on it (the test's SIGTERM point)
        self.wait_for_fix = False  # -j 2: TASK-CLAIM answers only once TASK-FIX is running too

    def __call__(self, body: dict) -> Reply:
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if "TASK-FIX" in prompt:
            self.fix_started.set()
            return tools(("write_file", {"path": "calc.py", "content": FIXED})) if turn == 0 else text("Fixed.")
        if "TASK-CLAIM" in prompt:
            if self.wait_for_fix and not self.fix_started.wait(60):
                return error(500, "TASK-FIX never ran alongside")
            return text("Done: add() adds now.")
        if "TASK-STEPS" in prompt:
            if self.gate is not None:
                self.gate.wait(60)
            return tools(("list_files", {}))
        if "TASK-SETUP" in prompt:
            return [tools(("read_file", {"path": "hint.txt"})),
                    tools(("write_file", {"path": "calc.py", "content": FIXED})), text("Done as hinted.")][min(turn, 2)]
        return error(500, f"unknown task: {prompt[:40]}")


def eval_argv(suite: Path, server: FakeServer, *more: str) -> list[str]:
    return [sys.executable, "-m", "loopagent", "eval", str(suite), "--base-url", server.url,
            *where_shells_run(), *more]


def run_eval(argv: list[str], home: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=clean_env(home),
                          stdin=subprocess.DEVNULL)


def inside(tmp: Path) -> list[str]:
    """Live processes whose working directory is under `tmp` (a run's copy)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and Path(os.readlink(proc / "cwd")).is_relative_to(tmp):
                found.append(proc.name)
        except OSError:
            continue
    return found


def lines_of(out: Path) -> dict[str, dict]:
    lines = [json.loads(t) for t in (out / "results.jsonl").read_text().splitlines()]
    by_id = {line["id"]: line for line in lines}
    assert len(by_id) == len(lines), f"a run recorded twice: {[line['id'] for line in lines]}"
    return by_id


def assert_verdicts(out: Path) -> dict[str, dict]:
    """The four runs' lines, each task's verdict as the suite intends."""
    by_id = lines_of(out)
    assert set(by_id) == {"fixed", "claimed", "steps", "setup"}
    assert [by_id[i]["status"] for i in ("fixed", "claimed", "steps", "setup")] == [
        "completed", "completed", "step_limit", "completed"]
    assert [by_id[i]["verified"] for i in ("fixed", "claimed", "steps", "setup")] == [True, False, False, True]
    assert by_id["claimed"]["check_exit_code"] == 1 and "AssertionError" in by_id["claimed"]["check_output"]
    assert by_id["steps"]["exit_code"] == 3 and by_id["steps"]["steps"] == 2
    for line in by_id.values():
        assert set(line) >= {"id", "attempt", "status", "exit_code", "steps", "usage", "duration_s", "verified",
                             "check_exit_code", "check_output", "session"}
        assert line["attempt"] == 1 and (out / line["session"]).is_file()
    assert "+    return a + b" in (out / "runs" / "fixed-1" / "diff.patch").read_text()
    assert (out / "runs" / "claimed-1" / "diff.patch").read_text() == ""
    return by_id


def summary_value(stdout: str, label: str) -> str:
    found = re.search(rf"{re.escape(label)}\s*[│|]\s*(\S+)", stdout)
    assert found, f"no {label!r} row in:\n{stdout}"
    return found.group(1)


def test_four_tasks_two_at_a_time(suite: Path, tmp_path: Path, loop_home: Path) -> None:
    model = Model()
    model.wait_for_fix = True  # proves -j 2: TASK-CLAIM answers only while TASK-FIX runs too
    with FakeServer(respond=model) as server:
        done = run_eval(eval_argv(suite, server, "-j", "2", "--out", str(tmp_path / "out")), loop_home)
        setup_requests = [r for r in server.requests if "TASK-SETUP" in json.dumps(r["messages"][1:2])]
    assert done.returncode == 0, done.stderr + done.stdout
    assert_verdicts(tmp_path / "out")
    # setup ran in the run's copy before the agent: the model read the file it wrote
    assert any("from setup" in json.dumps(r["messages"]) for r in setup_requests)
    assert (suite.parent / "repo" / "calc.py").read_text() == BROKEN  # the suite's repo is never touched
    values = {label: summary_value(done.stdout, label) for label in (
        "tasks", "completed", "verified", "completed but check failed", "limits hit", "errors", "tokens")}
    assert values == {"tasks": "4", "completed": "3", "verified": "2", "completed but check failed": "1",
                      "limits hit": "1", "errors": "0", "tokens": "880"}
    assert "| setup | 1 | completed | yes |" in (tmp_path / "out" / "report.md").read_text()


def test_sigterm_midway_then_resume_runs_each_task_once(suite: Path, tmp_path: Path, loop_home: Path) -> None:
    model, out, tmp = Model(), tmp_path / "out", tmp_path / "tmp"
    model.gate = threading.Event()
    tmp.mkdir()
    with FakeServer(respond=model) as server:
        proc = subprocess.Popen(eval_argv(suite, server, "--out", str(out)), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={**clean_env(loop_home), "TMPDIR": str(tmp)},
                                stdin=subprocess.DEVNULL)
        try:
            wait_for(lambda: any("TASK-STEPS" in json.dumps(r["messages"]) for r in server.requests), 60)
            proc.send_signal(signal.SIGTERM)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            model.gate.set()
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=10)
        assert proc.returncode == 143, stderr
        wait_for(lambda: not inside(tmp), 20)  # the cut run's agent ended, its copy is gone
        assert list(tmp.iterdir()) == []
        assert set(lines_of(out)) == {"fixed", "claimed"}  # the run cut short left no line
        assert "--resume" in stdout
        model.gate = None
        again = run_eval(eval_argv(suite, server, "--resume", str(out)), loop_home)
    assert again.returncode == 0, again.stderr + again.stdout
    assert "2 to run (2 already recorded)" in again.stdout
    assert_verdicts(out)
    assert summary_value(again.stdout, "tasks") == "4"
