"""`loop review` in a real git repository against the fake server: the diff reaches the model, nothing
can be written, the lines and exit codes a CI job reads, and which diff each of --uncommitted, --base
and --commit chooses."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from loopagent.cli.review_cmd import collect_diff, run_review
from loopagent.errors import UsageError
from loopagent.run.build import Host
from loopagent.run.spec import Flags
from tests.fakeserver import FakeServer, text, tools, user_texts

P1 = {"file": "calc.py", "line": 3, "severity": "P1", "title": "divide by zero  when b is 0",
      "body": "b == 0 raises ZeroDivisionError.\nGuard it."}
P3 = {"file": "calc.py", "line": 1, "severity": "P3", "title": "missing docstring", "body": "Say what it does."}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True,
                          timeout=30).stdout


def commit(repo: Path, name: str, content: str, message: str) -> str:
    (repo / name).write_text(content)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main: calc.py; branch feature: FEATURE-CANARY (two commits); main then gains MAIN-ONLY-CANARY."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "calc.py", "def div(a, b):\n    return a / b\n", "calc")
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, "calc.py", "def div(a, b):\n    # FEATURE-CANARY-1\n    return a / b\n", "feature 1")
    commit(repo, "notes.txt", "FEATURE-CANARY-2\n", "feature 2")
    git(repo, "checkout", "-q", "main")
    commit(repo, "other.txt", "MAIN-ONLY-CANARY\n", "main moves on")
    git(repo, "checkout", "-q", "feature")
    return repo


def answer(*findings: dict) -> str:
    return json.dumps({"findings": list(findings), "summary": "one bug"})


def test_review_end_to_end_diff_in_the_request_writes_refused_lines_and_exit_1(run_loop, repo, loop_home):
    (repo / "calc.py").write_text("def div(a, b):\n    # UNCOMMITTED-CANARY\n    return a / b\n")
    (repo / "new.py").write_text("UNTRACKED-CANARY = 1\n")
    script = [tools(("write_file", {"path": "calc.py", "content": "pwned\n"}), ("read_file", {"path": "calc.py"})),
              text(answer(P3, P1))]
    with FakeServer(script) as srv:
        proc = run_loop("review", "-C", str(repo), "--base-url", srv.url, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == ["calc.py:3: P1 divide by zero when b is 0",
                                        "    b == 0 raises ZeroDivisionError.", "    Guard it.",
                                        "calc.py:1: P3 missing docstring", "    Say what it does."]
    task = user_texts(srv.requests[0])[0]
    assert "+    # UNCOMMITTED-CANARY" in task and "+UNTRACKED-CANARY" in task and "FEATURE-CANARY-2" not in task
    assert "UNCOMMITTED-CANARY" in (repo / "calc.py").read_text()  # the write never happened
    refused = next(m for m in srv.requests[1]["messages"] if m["role"] == "tool" and "write" in m["tool_call_id"])
    assert refused["content"].startswith("denied")
    assert len(srv.requests) == 2  # the answer was valid against the findings schema the first time
    assert "review: 2 findings" in proc.stderr and "failing" in proc.stderr


def review(repo: Path, tmp_path: Path, srv: FakeServer, fail_on: str = "P1", json_out: bool = False,
           choice: tuple[str, str] = ("commit", "HEAD")) -> tuple[int, str]:
    """`loop review` in-process: the same function the command calls, over a real server and real git."""
    out = io.StringIO()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    host = Host(env=env, home=tmp_path / "home", cwd=repo, out=out, err=io.StringIO())
    return run_review(repo, choice, fail_on, json_out, Flags(base_url=srv.url), host), out.getvalue()


def test_no_findings_is_no_lines_and_exit_0(repo, tmp_path):
    with FakeServer([text(answer())]) as srv:
        assert review(repo, tmp_path, srv, "P3") == (0, "")


@pytest.mark.parametrize(("fail_on", "code"), [("P1", 0), ("P3", 1)])
def test_a_p3_finding_passes_the_default_gate_and_fails_at_fail_on_p3(repo, tmp_path, fail_on, code):
    with FakeServer([text(answer(P3))]) as srv:
        got, out = review(repo, tmp_path, srv, fail_on)
    assert (got, out) == (code, "calc.py:1: P3 missing docstring\n    Say what it does.\n")


def test_json_form_and_the_diff_of_base(repo, tmp_path):
    with FakeServer([text(answer(P1))]) as srv:
        code, out = review(repo, tmp_path, srv, json_out=True, choice=("base", "main"))
    assert code == 1
    assert json.loads(out) == {"findings": [P1], "summary": "one bug", "fail_on": "P1", "failed": True,
                               "exit_code": 1}
    task = user_texts(srv.requests[0])[0]
    assert "FEATURE-CANARY-1" in task and "FEATURE-CANARY-2" in task and "MAIN-ONLY-CANARY" not in task


def test_each_choice_takes_its_diff(repo):
    first = git(repo, "rev-parse", "HEAD~1").strip()
    diff, _ = collect_diff(repo, "commit", first)
    assert "FEATURE-CANARY-1" in diff and "FEATURE-CANARY-2" not in diff
    diff, _ = collect_diff(repo, "base", "main")
    assert "FEATURE-CANARY-1" in diff and "FEATURE-CANARY-2" in diff and "MAIN-ONLY" not in diff
    assert collect_diff(repo, "uncommitted", "")[0] == ""
    for kind, rev in (("commit", "no-such-rev"), ("base", "nope"), ("commit", "--output=/tmp/x")):
        with pytest.raises(UsageError, match="not a revision"):
            collect_diff(repo, kind, rev)


def test_a_bad_revision_is_exit_2_before_any_request(run_loop, repo, server):
    proc = run_loop("review", "-C", str(repo), "--base-url", server.url, "--commit", "deadbeef", timeout=60)
    assert proc.returncode == 2 and "--commit deadbeef: not a revision" in proc.stderr
    assert proc.stderr.count("\n") == 1 and not server.requests


def test_git_runs_nothing_a_hostile_repository_configures(repo, tmp_path):
    marker = tmp_path / "ran"
    for key, value in (("core.fsmonitor", f"touch {marker}; false"), ("diff.external", f"touch {marker}; true"),
                       ("core.pager", f"touch {marker}; cat")):
        git(repo, "config", key, value)
    (repo / "calc.py").write_text("changed\n")
    subprocess.run(["git", "-c", "core.pager=", "diff", "HEAD"], cwd=repo, capture_output=True, timeout=30,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull})
    assert marker.exists()  # the attack works on a plain `git diff`
    marker.unlink()
    for kind, rev in (("uncommitted", ""), ("commit", "HEAD"), ("base", "main")):
        collect_diff(repo, kind, rev)
    assert not marker.exists()
