"""The worker processes that carry out eval runs' agents through `loopagent.run` (eval/workers.py): one
serves its thread's runs in turn, yet each run sees only its own copy, home and environment; a run past
its bound is killed with everything it started, and its worker is never used again."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from loopagent.eval import workers
from loopagent.eval.pool import run_local
from loopagent.eval.task import TaskRun
from loopagent.eval.tree import pack
from loopagent.run.spec import Flags
from tests.conftest import wait_for
from tests.fakeserver import text_events, tool_events

# what the run's shell sees, and the pid of the process that started the call's guard: the worker
SEEN = ('printf "%s|%s|%s|%s" "$PWD" "$LOOP_HOME" "${LOOP_API_KEY:-no key}" '
        '"$(cut -d" " -f4 /proc/$PPID/stat)" > seen.txt')


def recording(path: Path, command: str) -> bytes:
    turns = [{"chunks": tool_events(("shell", {"command": command}))}, {"chunks": text_events("done")}]
    path.write_text(json.dumps({"turns": turns}))
    return path.read_bytes()


def test_one_worker_serves_a_threads_runs_each_in_its_own_copy_home_and_environment(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.txt").write_text("a\n")
    replay = recording(tmp_path / "turns.json", SEEN)
    flags = Flags(approval="all", sandbox="off", checkpoints=False, ctx_size=16384)
    specs = [TaskRun(id=f"t{i}", attempt=1, prompt="look", repo=pack(tmp_path / "repo"), check="test -f seen.txt",
                     replay=replay, flags=flags, environ={"LOOP_API_KEY": "sk-worker-canary"}) for i in range(2)]
    done, failed = [], []
    run_local(specs, 1, done.append, lambda s, e: failed.append(e), threading.Event())
    assert failed == [] and [o["line"]["verified"] for o in done] == [True, True], done
    seen = [next(x[1:] for x in o["diff"].splitlines() if x.startswith("+") and "|" in x).split("|") for o in done]
    (pwd1, home1, key1, worker1), (pwd2, home2, key2, worker2) = seen
    assert worker1 == worker2  # the same worker process carried out both runs
    assert pwd1 != pwd2 and pwd1.endswith("/repo") and home1 == str(Path(pwd1).parent / "home")
    assert home2 == str(Path(pwd2).parent / "home")
    assert (key1, key2) == ("no key", "no key")  # the key reached the run (its client), not its shell
    assert not Path(f"/proc/{worker1}").exists()  # the pool ended its workers


def test_a_run_past_its_bound_is_killed_with_what_it_started_and_its_worker_replaced(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    repo.mkdir()
    home.mkdir()
    pid_file = repo / "sleep.pid"
    recording(tmp_path / "turns.json", "sleep 60 & echo $! > sleep.pid; wait")
    job = {"prompt": "wait", "repo": str(repo), "home": str(home), "replay": str(tmp_path / "turns.json"),
           "flags": {"approval": "all", "sandbox": "off", "checkpoints": False, "ctx_size": 16384},
           "env": {"PATH": "/usr/bin:/bin"}, "secrets": {}}
    results: list = []
    worker = threading.Thread(target=lambda: results.append(workers.carry_out(job, 3.0, {"PATH": "/usr/bin:/bin"})))
    worker.start()
    worker.join(60)
    assert results and results[0][1] is True  # killed by its bound
    stat = Path(f"/proc/{int(pid_file.read_text())}/stat")

    def gone() -> bool:
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
        except OSError:
            return True

    wait_for(gone, 10)  # the backgrounded sleep of the run's shell call went with the worker
    assert workers._all == set()  # nor is the worker kept
