"""Eval throughput: `loop eval` of 50 instant tasks (one recorded turn each, a check of `true`) at `-j 1` and
`-j 2`, before and after in the same run.

"before" is the code at --before REV (default 5fa4774: each run's agent a `python -m loopagent agent` child),
extracted with `git archive` into a temporary directory and put first on PYTHONPATH; "after" is this checkout
(each run's agent in a worker process that calls `loopagent.run`, reused by its pool thread); "fresh worker"
is this checkout with a new worker per run (workers.REUSE = False), to show what reusing one saves.

Each row is the real `loop eval SUITE` command, timed from outside. The tasks do nothing, so the time is
the harness's own. "1 task" is the eval's start-up (loop's, the first worker's, one run). "per task" is a
run's share of a job slot past it, (wall - start-up) x jobs / (tasks - 1); "CPU ms" a run's CPU time (of
every process the eval started) past the start-up's, which a loaded machine does not stretch; "vs -j 1 past
start" the -j 1 time past start-up over this row's: how the runs themselves scale. "around agent" is the
median of the results' `duration_s` minus `agent_s` (a run's part around its agent: copy, diff, check).

    python bench/bench_eval.py [--quick] [--tasks N] [--rounds N] [--before REV] [--dask]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TURN = {"turns": [{"chunks": [
    {"id": "b", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Done."},
                                                               "finish_reason": "stop"}]}]}]}
# the inner process: the real `loop eval` command line, with eval/workers.py's REUSE set first (after only)
INNER = """import sys
reuse = sys.argv.pop(1) == "reuse"
try:
    from loopagent.eval import workers
    workers.REUSE = reuse
except ImportError:
    pass
from loopagent.__main__ import main
sys.argv[0] = "loop"
main()
"""


def suite(tmp: Path, tasks: int) -> Path:
    (tmp / "repo").mkdir(parents=True)
    (tmp / "repo" / "a.txt").write_text("hello\n")
    (tmp / "turn.json").write_text(json.dumps(TURN))
    body = "".join(f'[[task]]\nid = "t{i}"\nprompt = "say done {i}"\nrepo = "repo"\ncheck = "true"\n'
                   'replay = "turn.json"\n\n' for i in range(tasks))
    (tmp / "suite.toml").write_text(body)
    return tmp / "suite.toml"


def extract(rev: str, into: Path) -> Path:
    """The package at `rev`, from this repository's history (nothing is checked out or changed here)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "loopagent"], capture_output=True, check=True,
                             timeout=120).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True, timeout=120)
    return into


def once(code: Path, path: Path, jobs: int, reuse: bool, dask: bool, tmp: Path) -> tuple[float, float, list[dict]]:
    """Wall time and CPU time (the eval's and every process under it) of one `loop eval` of the suite with
    the package at `code`, and its result lines."""
    out = Path(tempfile.mkdtemp(dir=tmp, prefix="out-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOP_", "OPENAI_"))}
    env.update(PYTHONPATH=str(code), LOOP_HOME=str(tmp / "home"), LOOP_CTX_SIZE="16384")
    where = ["--dask", f"local:{jobs}"] if dask else ["-j", str(jobs)]
    argv = [sys.executable, "-P", "-c", INNER, "reuse" if reuse else "fresh", "eval", str(path), "--out", str(out),
            *where, "--approval", "all", "--sandbox", "off"]
    start, used = time.perf_counter(), cpu()
    done = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True, timeout=1800)
    wall, used = time.perf_counter() - start, cpu() - used
    if done.returncode != 0:
        sys.exit(f"loop eval failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return wall, used, lines


def cpu() -> float:
    """User and system time of this process's reaped descendants (a process's includes those it reaped)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="12 tasks, one round")
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--before", default="5fa4774", help="the baseline's git revision")
    parser.add_argument("--dask", action="store_true", help="also --dask local:2 (a LocalCluster's start-up included)")
    args = parser.parse_args()
    tasks = 12 if args.quick else args.tasks
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        before = extract(args.before, Path(tempfile.mkdtemp(dir=tmp, prefix="before-")))
        single, path = suite(tmp / "one", 1), suite(tmp / "all", tasks)
        cases = [("before", before, True), ("fresh worker", ROOT, False), ("after", ROOT, True)]
        runs = [("1 task", single, 1, 1, False), ("-j 1", path, tasks, 1, False), ("-j 2", path, tasks, 2, False),
                ("--dask local:2", path, tasks, 2, True)]
        runs = [run for run in runs if args.dask or not run[4]]
        seen: dict[tuple[str, str], list[tuple[float, float, list[float]]]] = {}
        for _ in range(args.rounds):  # every row once a round: a machine's load in a moment reaches all rows
            for label, code, reuse in cases:
                for runner, suite_path, count, jobs, dask in runs:
                    wall, used, lines = once(code, suite_path, jobs, reuse, dask, tmp)
                    assert len(lines) == count and all(x["verified"] for x in lines), lines[:3]
                    seen.setdefault((label, runner), []).append(
                        (wall, used, [x["duration_s"] - x["agent_s"] for x in lines]))
                    print(f"  {label} {runner}: {wall:.1f} s", file=sys.stderr, flush=True)
        rows = {key: (statistics.median(w for w, _, _ in got), statistics.median(u for _, u, _ in got),
                      statistics.median(a for _, _, around in got for a in around)) for key, got in seen.items()}
    table(rows, tasks, args.rounds, args.before, (load, os.getloadavg()[0]))


def table(rows: dict, tasks: int, rounds: int, rev: str, load: tuple[float, float]) -> None:
    """Per task: a run's share of one job slot past the eval's start-up (the 1-task eval's wall time, which
    holds loop's start, the first worker's and one run): (wall - start-up) x jobs / (tasks - 1); its CPU
    past the start-up's, which a loaded machine does not stretch."""
    print(f"loop eval of {tasks} instant tasks, median of {rounds} round(s), {os.cpu_count()} cores, load average "
          f"{load[0]:.1f} before, {load[1]:.1f} after; before = {rev}")
    print(f"{'code':<13} {'runner':<15} {'wall s':>7} {'tasks/min':>9} {'vs -j 1':>8} {'vs before':>9} "
          f"{'per task ms':>11} {'CPU ms':>7} {'vs -j 1 past start':>18} {'around agent ms':>15}")
    for (label, runner), (wall, used, around) in rows.items():
        start, start_cpu = rows[label, "1 task"][:2]
        if runner == "1 task":
            print(f"{label:<13} {'1 task, start-up':<15} {wall:7.1f} {'':>9} {'':>8} {'':>9} {'':>11} "
                  f"{used * 1000:7.0f}")
            continue
        jobs, one = 1 if runner == "-j 1" else 2, rows[label, "-j 1"][0]
        old = rows.get(("before", runner), (wall,))[0]
        per, per_cpu = max(wall - start, 0) * jobs / (tasks - 1), max(used - start_cpu, 0) / (tasks - 1)
        print(f"{label:<13} {runner:<15} {wall:7.1f} {tasks / wall * 60:9.1f} {one / wall:7.2f}x {old / wall:8.2f}x "
              f"{per * 1000:11.0f} {per_cpu * 1000:7.0f} {(one - start) / max(wall - start, 1e-9):17.2f}x "
              f"{around * 1000:15.0f}")


if __name__ == "__main__":
    main()
