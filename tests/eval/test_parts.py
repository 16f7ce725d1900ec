"""The parts of `loop eval` in process (suite parsing, results file, summary, diff) and its one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopagent.eval.results import Results
from loopagent.eval.suite import SuiteError, load_suite
from loopagent.eval.summary import summarise
from loopagent.eval.tree import diff_trees, pack, unpack
from tests.conftest import wait_for

GOOD = '[[task]]\nid = "a"\nprompt = "p"\nrepo = "repo"\ncheck = "true"\n'


@pytest.mark.parametrize(("text", "problem"), [
    ("[[task]\n", "not valid TOML"),
    ("title = 'x'\n", "no [[task]] tables"),
    ('[[task]]\nid = "a"\nprompt = "p"\nrepo = "repo"\n', "'check' is missing"),
    (GOOD.replace('check = "true"', 'check = "true"\nsteps = 3'), "unknown key 'steps'"),
    (GOOD + 'max_steps = -1\n', "'max_steps' must be a positive number"),
    (GOOD.replace('"repo"', '"nowhere"'), "repo 'nowhere' is not a directory"),
    (GOOD + GOOD, "id 'a' is used twice"),
    (GOOD + 'replay = "turns.json"\n', "replay 'turns.json' is not a file"),
])
def test_a_bad_suite_names_file_and_problem(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "repo").mkdir()
    path = tmp_path / "suite.toml"
    path.write_text(text)
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    assert str(caught.value).startswith(str(path)) and problem in str(caught.value)


def test_suite_paths_are_relative_to_the_suite_file(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "turns.json").write_text("{}")
    (tmp_path / "suite.toml").write_text(GOOD + 'replay = "turns.json"\ntimeout = 5\nsetup = "make"\n')
    [task] = load_suite(tmp_path / "suite.toml")
    assert (task.repo, task.replay, task.timeout, task.setup) == (tmp_path / "repo", tmp_path / "turns.json", 5, "make")


def test_the_cli_refuses_a_bad_suite_in_one_line(run_loop, tmp_path: Path) -> None:
    (tmp_path / "suite.toml").write_text("[[task]]\nid = 1\n")
    done = run_loop("eval", str(tmp_path / "suite.toml"), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "suite.toml: task 1: 'id' is missing" in done.stderr
    assert not (tmp_path / "out").exists()
    assert "Traceback" not in done.stderr


def test_without_dask_one_line_names_the_extra(run_loop, tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "suite.toml").write_text(GOOD)
    shim = tmp_path / "shim" / "distributed"  # an environment where `import distributed` fails
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('No module named distributed')\n")
    done = run_loop("eval", str(tmp_path / "suite.toml"), "--dask", "local:2", env={"PYTHONPATH": str(shim.parent)},
                    cwd=tmp_path, subprocess=True)  # the import path of a process of its own
    assert done.returncode == 2
    assert done.stderr == "loop: --dask needs Dask distributed: pip install 'loopagent[dask]'\n"
    bad = run_loop("eval", str(tmp_path / "suite.toml"), "--dask", "local:none")
    assert bad.returncode == 2 and "worker count" in bad.stderr and bad.stderr.count("\n") == 1


def test_results_skip_a_torn_line_and_never_glue_to_it(tmp_path: Path) -> None:
    first = {"id": "a", "attempt": 1, "status": "completed"}
    (tmp_path / "results.jsonl").write_text(json.dumps(first) + "\n" + '{"id": "b", "att')
    results = Results(tmp_path)
    assert results.done == {("a", 1)}
    results.record({"line": {"id": "b", "attempt": 1, "status": "step_limit"}, "session": b"{}\n", "diff": ""})
    lines = [json.loads(t) for t in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [(x["id"], x["status"]) for x in lines] == [("a", "completed"), ("b", "step_limit")]
    assert lines[1]["session"] == "runs/b-1/session.jsonl" and list(lines[1])[:3] == ["id", "attempt", "status"]
    assert Results(tmp_path).done == {("a", 1), ("b", 1)}


def test_summary_counts_and_pass_at_k() -> None:
    def line(task, attempt, status, verified, cost=None):
        out = {"id": task, "attempt": attempt, "status": status, "verified": verified,
               "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
        return out if cost is None else {**out, "cost_usd": cost}

    lines = [line("a", 1, "completed", False), line("a", 2, "completed", True, 0.5),
             line("b", 1, "time_limit", False), line("b", 2, "model_error", False)]
    s = summarise(lines, 3.0, repeat=2)
    assert (s.tasks, s.runs, s.completed, s.verified, s.claimed, s.limits, s.errors, s.tokens) == (2, 4, 2, 1, 1, 1, 1, 60)
    assert (s.pass_at_k, s.pass_at_1, s.cost) == (0.5, 0.25, 0.5)
    assert summarise(lines[:1], 1.0, 1).cost is None


def test_a_repo_travels_as_bytes_and_the_diff_is_the_agents_change(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "pkg" / "__pycache__").mkdir(parents=True)
    (src / "pkg" / "m.py").write_text("x = 1\n")
    (src / "gone.txt").write_text("bye\n")
    data = pack(src)
    unpack(data, tmp_path / "a")
    unpack(data, tmp_path / "b")
    (tmp_path / "b" / "pkg" / "m.py").write_text("x = 2\n")
    (tmp_path / "b" / "gone.txt").unlink()
    (tmp_path / "b" / "new.bin").write_bytes(b"\xff\x00")
    (tmp_path / "b" / "pkg" / "__pycache__" / "m.pyc").write_bytes(b"\x00")
    diff = diff_trees(tmp_path / "a", tmp_path / "b")
    assert "--- a/pkg/m.py\n+++ b/pkg/m.py\n" in diff and "-x = 1\n+x = 2\n" in diff
    assert "--- a/gone.txt\n+++ /dev/null\n" in diff and "Binary files a/new.bin and b/new.bin differ" in diff
    assert "__pycache__" not in diff


def test_a_tar_member_outside_the_directory_is_refused(tmp_path: Path) -> None:
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("../escape.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(tarfile.TarError):
        unpack(buffer.getvalue(), tmp_path / "in")
    assert not (tmp_path / "escape.txt").exists()


def test_a_command_past_its_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    import os

    from loopagent.eval.process import run_bounded

    pid_file = tmp_path / "child.pid"
    code, out = run_bounded(["bash", "-c", f"sleep 30 & echo $! > {pid_file}; echo started; wait"], tmp_path,
                            {"PATH": os.environ["PATH"]}, 0.5)
    assert code is None and "started" in out and "[timed out after 0.5 s]" in out
    stat = Path(f"/proc/{int(pid_file.read_text())}/stat")

    def gone() -> bool:  # the backgrounded sleep went with its group: no process, or a zombie awaiting init
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
        except OSError:
            return True

    wait_for(gone, 10)


def test_specs_cover_each_attempt_once_and_skip_recorded_runs(tmp_path: Path) -> None:
    from loopagent.eval.driver import EvalOptions, build_specs

    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "f.txt").write_text("x\n")
    (tmp_path / "suite.toml").write_text(GOOD + GOOD.replace('"a"', '"b"') + "max_steps = 4\n")
    opts = EvalOptions(suite=tmp_path / "suite.toml", out=tmp_path / "out", repeat=2, max_steps=9, timeout=60)
    specs = build_specs(load_suite(tmp_path / "suite.toml"), opts, {("a", 1)}, None)
    assert [s.key for s in specs] == [("b", 1), ("a", 2), ("b", 2)]
    assert [(s.max_steps, s.timeout) for s in specs] == [(4, 60), (9, 60), (4, 60)]  # a task's own limit wins


def test_a_run_the_harness_cannot_carry_out_is_reported_not_recorded(tmp_path: Path) -> None:
    import threading

    from loopagent.eval.pool import run_local
    from loopagent.eval.task import TaskRun

    done, failed = [], []
    spec = TaskRun(id="bad", attempt=1, prompt="p", repo=b"not a tar", check="true")
    run_local([spec], 2, done.append, lambda s, e: failed.append((s.key, type(e).__name__)), threading.Event())
    assert done == [] and failed == [(("bad", 1), "ReadError")]
