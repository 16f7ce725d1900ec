"""Runs on Dask distributed: `local:N` starts a LocalCluster, anything else is a scheduler address.

No shared file system is assumed: each TaskRun carries its repo as bytes and each run returns its line,
session bytes and diff to the driver. `pure=False`: repeated attempts of one task are distinct runs, not
one result to deduplicate; `retries` resubmits a run whose worker was lost.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from loopagent.eval.pool import POLL, Done, Failed
from loopagent.eval.task import TaskRun, run_task

RETRIES = 2
INSTALL = "pip install 'loopagent[dask]'"


class DaskUsage(ValueError):
    """A --dask value that cannot be used (one line for the user, exit 2)."""


class MissingDask(DaskUsage):
    """The `dask` extra is not installed."""


def connect(address: str):
    """A distributed Client for `local:N` or a scheduler address; (client, cluster or None)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise MissingDask(f"--dask needs Dask distributed: {INSTALL}") from None
    if address.startswith("local:"):
        workers = local_workers(address)
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        return Client(cluster), cluster
    return Client(address, timeout="20s"), None


def local_workers(address: str) -> int | None:
    """N of `local:N` (None for a scheduler address); DaskUsage when N is not a positive number."""
    if not address.startswith("local:"):
        return None
    count = address.split(":", 1)[1]
    if not count.isdigit() or int(count) < 1:
        raise DaskUsage(f"--dask local:N needs a worker count of 1 or more, not {count!r}")
    return int(count)


def run_dask(specs: Sequence[TaskRun], address: str, done: Done, failed: Failed, stop: threading.Event) -> None:
    """Submit every spec to the cluster at `address` and report each as it ends."""
    client, cluster = connect(address)
    try:
        futures = {client.submit(run_task, spec, pure=False, retries=RETRIES,
                                 key=f"loop-eval-{spec.id}-{spec.attempt}-{time.time_ns()}"): spec
                   for spec in specs}
        while futures and not stop.is_set():
            finished = [f for f in futures if f.done()]
            if not finished:
                time.sleep(POLL)  # a poll of `stop`, not synchronisation: the futures hold the results
            for future in finished:
                spec = futures.pop(future)
                if future.status == "finished":
                    done(future.result())
                else:
                    failed(spec, future.exception() or RuntimeError(future.status))
        for future in futures:
            future.cancel()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
