"""Eval throughput: 12 instant tasks (recorded turns, a check of `true`) with 1 worker, `-j 2` and
Dask (a LocalCluster of 2 workers, started beforehand: its start-up is shown on its own line).
Tasks per minute, and the harness's own overhead per task (a run's time minus its agent's).

    python bench/bench_eval.py [--quick]
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TASKS = 12
TURN = {"turns": [{"chunks": [
    {"id": "b", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Done."},
                                                               "finish_reason": "stop"}]}]}]}


def suite(tmp: Path) -> Path:
    (tmp / "repo").mkdir()
    (tmp / "repo" / "a.txt").write_text("hello\n")
    (tmp / "turn.json").write_text(json.dumps(TURN))
    tasks = "".join(f'[[task]]\nid = "t{i}"\nprompt = "say done {i}"\nrepo = "repo"\ncheck = "true"\n'
                    'replay = "turn.json"\n\n' for i in range(TASKS))
    (tmp / "suite.toml").write_text(tasks)
    return tmp / "suite.toml"


def once(path: Path, jobs: int, dask: str | None) -> tuple[float, list[dict]]:
    """Wall time of one eval of the suite and its lines (in process: the driver's own code paths)."""
    from loopagent.eval.driver import EvalOptions, build_specs
    from loopagent.eval.pool import run_local
    from loopagent.eval.suite import load_suite

    opts = EvalOptions(suite=path, out=path.parent / "out", jobs=jobs,
                       agent_args=["--approval", "all", "--sandbox", "off", "--no-checkpoints"])
    specs = build_specs(load_suite(path), opts, set(), None)
    lines: list[dict] = []
    stop = threading.Event()
    start = time.perf_counter()
    if dask:
        from loopagent.eval.cluster import run_dask

        run_dask(specs, dask, lambda o: lines.append(o["line"]), lambda s, e: print("failed", s.id, e), stop)
    else:
        run_local(specs, jobs, lambda o: lines.append(o["line"]), lambda s, e: print("failed", s.id, e), stop)
    return time.perf_counter() - start, lines


def main() -> None:
    quick = "--quick" in sys.argv
    rounds = 1 if quick else 3
    os.environ["LOOP_CTX_SIZE"] = "16384"
    from distributed import LocalCluster

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LOOP_HOME"] = str(Path(tmp) / "home")
        path = suite(Path(tmp))
        began = time.perf_counter()
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.ERROR)
        started = time.perf_counter() - began
        rows = {}
        try:
            for label, jobs, dask in (("1 worker", 1, None), ("-j 2", 2, None), ("--dask local:2", 2, cluster.scheduler_address)):
                walls, overheads = [], []
                for _ in range(rounds):
                    wall, lines = once(path, jobs, dask)
                    assert len(lines) == TASKS and all(x["verified"] for x in lines), lines
                    walls.append(wall)
                    overheads += [x["duration_s"] - x["agent_s"] for x in lines]
                rows[label] = (statistics.median(walls), statistics.median(overheads))
        finally:
            cluster.close()
    base = rows["1 worker"][0]
    print(f"{TASKS} instant tasks, median of {rounds} round(s), {os.cpu_count()} cores")
    print(f"{'runner':<16} {'wall s':>8} {'tasks/min':>10} {'vs 1 worker':>12} {'overhead/task ms':>17}")
    for label, (wall, overhead) in rows.items():
        print(f"{label:<16} {wall:8.2f} {TASKS / wall * 60:10.1f} {base / wall:11.2f}x {overhead * 1000:17.0f}")
    print(f"LocalCluster(2) start-up (not in the rows): {started:.2f} s")


if __name__ == "__main__":
    main()
