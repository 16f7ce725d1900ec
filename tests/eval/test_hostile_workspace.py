"""`loop eval` against a hostile workspace: the model's files are never imported by loop, nothing of a killed
eval runs on or stays on disk, and a huge sparse file does not take the diff's memory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import clean_env, wait_for, where_shells_run
from tests.fakeserver import FakeServer, Reply, text, tools


def plant(marker: Path) -> list[Reply]:
    """The model writes a `bashlex.py` into the workspace, then calls shell: loop parses the command with bashlex."""
    planted = f"open({str(marker)!r}, 'w').write('imported by loop')\n"
    return [tools(("write_file", {"path": "bashlex.py", "content": planted})),
            tools(("shell", {"command": "echo hi"})), text("done")]


def test_a_model_written_module_in_the_copy_is_not_imported_by_the_agent(tmp_path: Path, loop_home: Path):
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    ws.mkdir()
    # the attack, on a plain `python -m loopagent` started in the workspace: loop imports the planted module
    with FakeServer(plant(marker)) as server:
        subprocess.run([sys.executable, "-m", "loopagent", "agent", "--json", "-C", str(ws), "--base-url", server.url,
                        "--approval", "all", *where_shells_run(), "plant"], cwd=ws, capture_output=True, text=True,
                       timeout=60, env=clean_env(loop_home), stdin=subprocess.DEVNULL)
    assert marker.read_text() == "imported by loop"
    marker.unlink()
    # the same through `loop eval`, whose runs start in their copy: the module stays the model's file
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.txt").write_text("a\n")
    suite, out = tmp_path / "suite.toml", tmp_path / "out"
    suite.write_text('[[task]]\nid = "plant"\nprompt = "plant"\nrepo = "repo"\ncheck = "true"\n')
    with FakeServer(plant(marker)) as server:
        done = subprocess.run([sys.executable, "-m", "loopagent", "eval", str(suite), "--base-url", server.url,
                               *where_shells_run(), "--out", str(out)], capture_output=True, text=True, timeout=120,
                              env=clean_env(loop_home), stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr + done.stdout
    [line] = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert line["status"] == "completed" and line["steps"] == 3  # the shell call ran, parsed by the real bashlex
    assert "bashlex.py" in (out / "runs" / "plant-1" / "diff.patch").read_text()
    assert not marker.exists()


def processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, name) of every process now."""
    table = {}
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                head, _, rest = f.read().rpartition(")")
            fields = rest.split()
            table[int(entry)] = (int(fields[1]), fields[0], head.partition("(")[2])
        except (OSError, ValueError, IndexError):
            continue
    return table


def descendants(pid: int) -> dict[int, str]:
    table, found, todo = processes(), {}, [pid]
    while todo:
        parent = todo.pop()
        for child, (ppid, _state, name) in table.items():
            if ppid == parent and child not in found:
                found[child] = name
                todo.append(child)
    return found


def any_alive(pids) -> bool:
    table = processes()
    return any(table.get(pid, (0, "X", ""))[1] not in ("Z", "X") for pid in pids)


def test_a_sigkilled_eval_leaves_no_process_and_the_next_one_removes_its_copy_and_resumes(
        tmp_path: Path, loop_home: Path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.txt").write_text("a\n")
    suite, out, tmp = tmp_path / "suite.toml", tmp_path / "out", tmp_path / "tmp"
    suite.write_text('[[task]]\nid = "long"\nprompt = "wait"\nrepo = "repo"\ncheck = "test -f done.txt"\n')
    tmp.mkdir()
    env = {**clean_env(loop_home), "TMPDIR": str(tmp)}
    argv = [sys.executable, "-m", "loopagent", "eval", str(suite), *where_shells_run()]
    sandboxed = not where_shells_run()
    with FakeServer([tools(("shell", {"command": "touch started; sleep 300"}))]) as server, \
            open(tmp_path / "eval.log", "w") as log:
        proc = subprocess.Popen([*argv, "--base-url", server.url, "--out", str(out)], env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        tree: dict[int, str] = {}
        try:
            wait_for(lambda: any(tmp.glob("loop-eval-long-*/repo/started")), 60)
            wait_for(lambda: "sleep" in descendants(proc.pid).values(), 10)  # agent, bwrap, bash, sleep
            tree = descendants(proc.pid)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            # where bwrap cannot run the agent's shell call is unsandboxed: the agent's own containment ends it
            # with the agent (not eval's part), and else the next eval does (below)
            watched = tree if sandboxed else {pid for pid, name in tree.items() if name not in ("bash", "sleep")}
            wait_for(lambda: not any_alive(watched), 20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
            for pid in tree:  # when the test fails: nothing of it runs on
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    [left] = tmp.iterdir()  # the killed eval's copy, which it could not remove
    assert left.name.startswith("loop-eval-long-") and (left / "repo" / "a.txt").is_file()
    assert (out / "eval.json").is_file() and not (out / "results.jsonl").exists()
    with FakeServer([tools(("write_file", {"path": "done.txt", "content": "ok"})), text("done")]) as server:
        again = subprocess.run([*argv, "--base-url", server.url, "--resume", str(out)], env=env, capture_output=True,
                               text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert again.returncode == 0, again.stderr + again.stdout
    assert "removed 1 temporary copy a killed eval left behind" in again.stdout
    assert "1 to run (0 already recorded)" in again.stdout
    [line] = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert line["id"] == "long" and line["verified"] is True
    assert list(tmp.iterdir()) == [] and not any_alive(tree)


def test_the_sweep_removes_only_copies_whose_maker_is_known_to_be_gone(tmp_path: Path, monkeypatch):
    import tempfile

    from loopagent.eval.copies import OWNER, TAG, me, run_copy, sweep

    ended = subprocess.Popen(["true"])
    ended.wait(timeout=10)
    dead = {**me(), "pid": ended.pid, "start": "1"}
    owners = {
        "loop-eval-dead-1": dead,  # its maker ended
        "loop-eval-reused-1": {**me(), "start": "1"},  # its pid now names another process (this one)
        "loop-eval-live-1": me(),  # a live eval's copy
        "loop-eval-elsewhere-1": {**dead, "host": "another-machine"},  # a shared TMPDIR: not ours to judge
        "loop-eval-container-1": {**dead, "pidns": "pid:[1]"},  # another PID namespace's process
        "loop-eval-torn-1": "{not json",
        "loop-eval-unmarked-1": None,  # an older loop's, or one being made right now
        "other-dead-1": dead,  # not a copy's name
    }
    for name, owner in owners.items():
        (tmp_path / name / "repo").mkdir(parents=True)
        if owner is not None:
            (tmp_path / name / OWNER).write_text(owner if isinstance(owner, str) else json.dumps(owner))
    (tmp_path / "elsewhere" / "repo").mkdir(parents=True)  # a link to a dead copy is not followed
    (tmp_path / "elsewhere" / OWNER).write_text(json.dumps(dead))
    (tmp_path / "loop-eval-link-1").symlink_to(tmp_path / "elsewhere")
    # what a run started outside the sandbox and the parent-death signal (a setup's background job)
    jobs = {name: subprocess.Popen(["sleep", "60"], env={TAG: str(tmp_path / name)})
            for name in ("loop-eval-dead-1", "loop-eval-live-1")}
    try:
        removed = sweep(str(tmp_path))
        assert jobs["loop-eval-dead-1"].wait(timeout=10) == -signal.SIGKILL  # its copy's eval is gone
        assert jobs["loop-eval-live-1"].poll() is None  # a live eval's is left alone
    finally:
        for job in jobs.values():
            job.kill()
            job.wait(timeout=10)
    assert sorted(p.name for p in removed) == ["loop-eval-dead-1", "loop-eval-reused-1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        {*owners, "elsewhere", "loop-eval-link-1"} - {"loop-eval-dead-1", "loop-eval-reused-1"})
    assert (tmp_path / "elsewhere" / "repo").is_dir()
    (tmp_path / "own").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "own"))
    with run_copy("mine") as root:  # a run's own copy names this process and survives a sweep meanwhile
        assert json.loads((root / OWNER).read_text())["pid"] == os.getpid()
        assert sweep() == [] and root.is_dir()
    assert list((tmp_path / "own").iterdir()) == []


def test_resume_needs_an_eval_directory_even_one_that_crashed_before_its_first_result(tmp_path: Path):
    import pytest
    import typer

    from loopagent.cli.eval_cmd import output_dir
    from loopagent.eval.results import mark

    suite = tmp_path / "suite.toml"
    with pytest.raises(typer.Exit) as refused:
        output_dir(None, tmp_path, suite, example=False)
    assert refused.value.exit_code == 2
    mark(tmp_path, suite, {"t": "digest"})
    assert output_dir(None, tmp_path, suite, example=False) == tmp_path
    assert json.loads((tmp_path / "eval.json").read_text())["tasks"] == {"t": "digest"}


DIFF_PEAK = """
import resource, sys, time
from pathlib import Path
from loopagent.eval.tree import diff_trees
began = time.monotonic()
diff = diff_trees(Path(sys.argv[1]), Path(sys.argv[2]))
Path(sys.argv[3]).write_text(diff)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.monotonic() - began, len(sys.modules))
"""


def test_a_huge_sparse_file_is_named_not_read_and_long_files_diff_quickly(tmp_path: Path):
    from loopagent.eval.tree import pack, unpack

    src, before, after = tmp_path / "src", tmp_path / "before", tmp_path / "after"
    src.mkdir()
    long = [f"line {i}\n" for i in range(20000)]
    (src / "big.txt").write_text("y\n" * (1 << 20))
    (src / "long.txt").write_text("".join(long))
    (src / "grows.txt").write_text("small\n")
    for path in src.iterdir():
        os.utime(path, (1_600_000_000.5, 1_600_000_000.5))
    unpack(pack(src), after)  # the run's copy, then its `before`, as run_task makes them
    unpack(pack(after), before)
    for name, size in (("sparse.img", 300 << 20), ("holes.txt", 4096)):  # `truncate -s`: all hole, no disk
        (after / name).touch()
        os.truncate(after / name, size)  # holes.txt is small, read, and binary: its hole reads as NULs
    (after / "grows.txt").write_text("big now\n" * (1 << 18))
    (after / "long.txt").write_text("".join("changed\n" if i % 7 == 0 else line for i, line in enumerate(long)))
    done = subprocess.run([sys.executable, "-c", DIFF_PEAK, str(before), str(after), str(tmp_path / "diff")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    peak_kib, seconds, modules = done.stdout.split()
    diff = (tmp_path / "diff").read_text()
    assert "Binary files a/sparse.img and b/sparse.img differ (314572800 bytes, over the 1 MiB a diff reads" in diff
    assert "Binary files a/holes.txt and b/holes.txt differ\n" in diff
    assert "Binary files a/grows.txt and b/grows.txt differ (2097152 bytes, over" in diff
    assert "big.txt" not in diff  # unchanged, over the limit: compared by size and time, not read
    assert "--- a/long.txt\n+++ b/long.txt\n" in diff and diff.count("\n+changed\n") == 20000 // 7 + 1
    # bounds on pathology, not measurements: reading the 300 MiB file would take over 300 MiB (a normal run
    # peaks near 50 MiB, once at 164 under a full suite on Debian's Python), a quadratic diff takes minutes
    assert int(peak_kib) < 250 * 1024 and float(seconds) < 60, (peak_kib, seconds, modules)


def test_a_run_that_left_too_many_files_gets_a_diff_of_the_first_ones(tmp_path: Path, monkeypatch):
    from loopagent.eval import tree

    monkeypatch.setattr(tree, "MAX_FILES", 3)
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / ".git").mkdir(parents=True)
    (tmp_path / "b" / ".git" / "config").write_text("skipped, and not counted\n")
    for n in range(6):
        (tmp_path / "b" / f"f{n}.txt").write_text(f"{n}\n")
    diff = tree.diff_trees(tmp_path / "a", tmp_path / "b")
    assert diff.startswith("[more than 3 files: the diff compares the first]\n")
    assert [line for line in diff.splitlines() if line.startswith("+++")] == ["+++ b/f0.txt", "+++ b/f1.txt",
                                                                               "+++ b/f2.txt"]


def test_the_secrets_re_exec_keeps_a_safe_path_when_started_in_an_installed_checkout(monkeypatch):
    # `python -m loopagent` run from loop's own checkout puts it first on sys.path; where the package is also
    # installed from there (editable), the re-exec still gets -P: nothing else of that directory is imported
    import loopagent
    from loopagent.secrets import interpreter_options

    checkout = str(Path(loopagent.__file__).resolve().parent.parent)
    monkeypatch.setattr(sys, "path", [checkout, *sys.path])
    assert "-P" in interpreter_options()
