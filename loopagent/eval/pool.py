"""Where runs execute: N at a time on this machine, or on a Dask cluster (eval/cluster.py).

Both call `done(outcome)` or `failed(spec, error)` in the driver's thread as each run ends, and return
early when `stop` is set (SIGTERM): runs cut short are not reported.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from loopagent.eval.process import CHILDREN, Stopped
from loopagent.eval.task import TaskRun, run_task

POLL = 0.1  # seconds between looks at `stop` while runs are under way

Done = Callable[[dict], None]
Failed = Callable[[TaskRun, BaseException], None]


def run_local(specs: Sequence[TaskRun], jobs: int, done: Done, failed: Failed, stop: threading.Event) -> None:
    """Run specs `jobs` at a time. Each run's work is in other processes (setup, check, and the agent in a
    worker each thread keeps); the threads here only start them and wait, so N of them keep N runs going
    without sharing a GIL's work."""
    from loopagent.eval.workers import close_all

    try:
        _run(specs, jobs, done, failed, stop)
    finally:
        close_all()  # the runs' worker processes (eval/workers.py), idle once the pool is done


def _run(specs: Sequence[TaskRun], jobs: int, done: Done, failed: Failed, stop: threading.Event) -> None:
    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="loop-eval") as pool:
        pending = {pool.submit(run_task, spec): spec for spec in specs}
        try:
            while pending and not stop.is_set():
                finished, _ = wait(pending, timeout=POLL, return_when=FIRST_COMPLETED)
                for future in finished:
                    spec = pending.pop(future)
                    error = future.exception()
                    if isinstance(error, Stopped):
                        continue
                    if error is not None:
                        failed(spec, error)
                    else:
                        done(future.result())
        finally:
            if stop.is_set() or pending:
                CHILDREN.stop()
                for future in pending:
                    future.cancel()
