"""Review of `loop eval` as a CI user runs it: --repeat end to end, --resume against another or a changed
suite, a check that prints far more than anyone keeps, task ids that differ only in unsafe characters."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import FakeServer, Reply, text, tools

CHECK = "python -c 'import calc; assert calc.add(2, 3) == 5'"
SUITE = f"""
[[task]]
id = "fix"
prompt = "TASK-FIX: make add() add"
repo = "repo"
check = "{CHECK}"

[[task]]
id = "claim"
prompt = "TASK-CLAIM: make add() add"
repo = "repo"
check = "{CHECK}"
"""


def respond(body: dict) -> Reply:
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if "TASK-FIX" in prompt and turn == 0:
        return tools(("write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}))
    return text("Done.")


def loop_eval(suite: Path, server: FakeServer, home: Path, *more: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "loopagent", "eval", str(suite), "--base-url", server.url, *where_shells_run(), *more]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=clean_env(home),
                          stdin=subprocess.DEVNULL)


def row(stdout: str, label: str) -> str | None:
    found = re.search(rf"{re.escape(label)}\s*[│|]\s*(\S+)", stdout)
    return found.group(1) if found else None


def test_repeat_twice_then_resume_only_with_the_suite_that_made_the_results(tmp_path: Path, loop_home: Path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    suite, out = tmp_path / "suite.toml", tmp_path / "out"
    suite.write_text(SUITE)
    with FakeServer(respond=respond) as server:
        ran = loop_eval(suite, server, loop_home, "--repeat", "2", "-j", "6", "--out", str(out))
        assert ran.returncode == 0, ran.stderr + ran.stdout
        lines = [json.loads(t) for t in (out / "results.jsonl").read_text().splitlines()]
        assert sorted((line["id"], line["attempt"]) for line in lines) == [
            ("claim", 1), ("claim", 2), ("fix", 1), ("fix", 2)]  # each run once, -j above the runs
        assert {line["id"]: line["verified"] for line in lines} == {"fix": True, "claim": False}
        for line in lines:
            assert (out / line["session"]).is_file() and line["session"].endswith(f"-{line['attempt']}/session.jsonl")
        assert "+    return a + b" in (out / "runs" / "fix-2" / "diff.patch").read_text()
        assert (row(ran.stdout, "runs"), row(ran.stdout, "pass@2"), row(ran.stdout, "pass@1")) == ("4", "50%", "50%")
        assert "| claim | 2 | completed | no | 1 |" in (out / "report.md").read_text()
        recorded = (out / "results.jsonl").read_bytes()

        # a resume asking one attempt sums up that one, not the second attempts it also holds
        once = loop_eval(suite, server, loop_home, "--resume", str(out))
        assert once.returncode == 0, once.stderr
        assert "0 to run (2 already recorded)" in once.stdout
        assert (row(once.stdout, "runs"), row(once.stdout, "verified"), row(once.stdout, "pass@1")) == ("2", "1", None)

        # another suite, or this one with a task changed: refused in one line, nothing run or written
        other = tmp_path / "other.toml"
        other.write_text("[[task]]" + SUITE.split("[[task]]")[1])  # only "fix"
        changed = tmp_path / "changed.toml"
        changed.write_text(SUITE.replace("TASK-CLAIM: make add() add", "TASK-CLAIM: make add() add, please"))
        requests = len(server.requests)
        for bad, word in ((other, "'claim', which"), (changed, "'claim' of")):
            refused = loop_eval(bad, server, loop_home, "--resume", str(out), "--repeat", "2")
            assert refused.returncode == 2, refused.stdout + refused.stderr
            assert word in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
            assert "Traceback" not in refused.stderr
        assert len(server.requests) == requests
    assert (out / "results.jsonl").read_bytes() == recorded


def test_a_check_that_prints_tens_of_megabytes_keeps_only_its_end(tmp_path: Path) -> None:
    from loopagent.eval.process import run_bounded

    code, out = run_bounded(["bash", "-c", "head -c 30000000 /dev/zero | tr '\\0' x; printf '\\nEND\\n'; exit 3"],
                            tmp_path, {"PATH": os.environ["PATH"]}, 60)
    assert code == 3 and out.endswith("x\nEND\n")
    assert len(out) < 1_000_000, len(out)  # not the whole 30 MB in the harness's memory (x jobs)
    assert re.match(r"\[\.\.\. \d+ bytes of output before this are not shown\]\n", out)


def test_ids_that_differ_only_in_unsafe_characters_keep_their_own_run_directories(tmp_path: Path) -> None:
    from loopagent.eval.results import Results

    results = Results(tmp_path)
    for name in ("a b", "a_b", "a/b"):
        results.record({"line": {"id": name, "attempt": 1}, "session": name.encode(), "diff": ""})
    stored = {line["id"]: (tmp_path / line["session"]).read_bytes() for line in results.lines}
    assert stored == {"a b": b"a b", "a_b": b"a_b", "a/b": b"a/b"}


def test_ctrl_c_ends_the_runs_records_nothing_half_done_and_says_how_to_resume(tmp_path: Path, loop_home: Path) -> None:
    import signal
    import threading

    from tests.conftest import wait_for
    from tests.eval.test_hostile_workspace import any_alive, descendants

    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    suite, out = tmp_path / "suite.toml", tmp_path / "out"
    suite.write_text(SUITE.split("[[task]]")[0] + "[[task]]" + SUITE.split("[[task]]")[2])  # only "claim"
    gate = threading.Event()

    def held(body: dict) -> Reply:
        gate.wait(60)
        return text("Done.")

    with FakeServer(respond=held) as server:
        argv = [sys.executable, "-m", "loopagent", "eval", str(suite), "--base-url", server.url, "--out", str(out),
                *where_shells_run()]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=clean_env(loop_home), stdin=subprocess.DEVNULL)
        try:
            wait_for(lambda: server.requests, 60)  # the run's agent is mid-request
            under = descendants(proc.pid)  # the run's worker (eval/workers.py), in a session of its own
            proc.send_signal(signal.SIGINT)  # what Ctrl+C sends the eval (its runs have their own sessions)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            gate.set()
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=10)
    assert proc.returncode == 130, stderr
    assert under and not any_alive(under)  # Ctrl+C ended the worker and all under it, not only the eval
    assert f"--resume {out}" in stdout and "Traceback" not in stderr
    assert not (out / "results.jsonl").exists() or (out / "results.jsonl").read_text() == ""
