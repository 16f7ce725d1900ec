"""The worker processes that carry out runs' agents (eval/worker.py), one per thread that runs tasks: a
pool thread of `-j N`, or a Dask worker's thread.

A worker is started once and serves its thread's runs one after another, so a run pays for its agent,
not for an interpreter and loop's imports (about 0.4 s of CPU each). Each run still gets its own copy,
home and environment (set whole for the job), and a worker that is stopped or times out is killed and
replaced, never reused. The worker is started outside any workspace with `-P`, in its own session and
with the parent-death signal of the thread that starts it (which serves it, so outlives it); every
process a run starts dies with the worker (shell calls are contained, MCP servers and hooks guarded,
bwrap dies with its parent).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import threading
import time

from loopagent.eval.process import CHILDREN, KILL_AFTER, Stopped, Tail, kill_group
from loopagent.spawn import python_argv, safe_env

REUSE = True  # False: a fresh worker per run (bench/bench_eval.py measures both)
TICK = 0.2  # seconds between looks at the eval's stop while a run is under way


class WorkerDied(Exception):
    """The worker ended without answering (killed, or a crash of the interpreter)."""


class Worker:
    """One worker process and the pipes of its protocol (a JSON line each way)."""

    def __init__(self, env: dict[str, str]):
        self.proc = CHILDREN.open(python_argv("-m", "loopagent.eval.worker"), True, cwd="/", env=safe_env(env),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.errors = Tail(self.proc.stderr)  # a crashed worker's traceback, for the run's message
        self.buffer = b""
        self.closed = False

    def ask(self, job: dict, bound: float | None) -> tuple[dict, bool]:
        """Carry out `job`; (the reply, whether the bound ran out). Past `bound` seconds the worker is asked to
        end its run (SIGTERM: the run is cancelled, its session ended), then killed KILL_AFTER later. Raises
        Stopped when the eval stops meanwhile, WorkerDied when the worker ends without a reply."""
        try:
            self.proc.stdin.write(json.dumps(job).encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerDied(self.why()) from None
        deadline = None if bound is None else time.monotonic() + bound
        try:
            line = self.read(deadline)
        except WorkerDied as exc:  # the run took its interpreter down: its error, as a crashed `loop agent`'s
            return {"code": self.proc.returncode, "out": "", "err": str(exc)}, False
        if line is not None:
            return json.loads(line), False
        self.end()  # past the bound, or the eval is stopping
        try:
            line = self.read(time.monotonic() + KILL_AFTER, polite=False)
        except WorkerDied:
            line = None
        self.close()
        if CHILDREN.stopping.is_set():
            raise Stopped("the eval is stopping")
        return (json.loads(line) if line is not None else {"code": None, "out": "", "err": ""}), True

    def read(self, deadline: float | None, polite: bool = True) -> bytes | None:
        """The reply line, or None at `deadline` (or, `polite`, when the eval stops). Raises WorkerDied at EOF."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            if polite and CHILDREN.stopping.is_set():
                return None
            left = TICK if deadline is None else min(TICK, deadline - time.monotonic())
            if left <= 0:
                return None
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    why = self.why()
                    self.close()
                    raise WorkerDied(why)
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def end(self) -> None:
        try:
            self.proc.send_signal(signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """Kill the worker's group and reap it (an idle worker has nothing to lose); once."""
        if self.closed:
            return
        self.closed = True
        kill_group(self.proc)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.proc.wait()
        CHILDREN.forget(self.proc)
        with _lock:
            _all.discard(self)

    def why(self) -> str:
        try:
            code = self.proc.wait(KILL_AFTER)
        except subprocess.TimeoutExpired:  # its stdout closed but it lives on: not a worker to keep
            kill_group(self.proc)
            code = self.proc.wait()
        text = self.errors.text(1.0).strip()
        return f"the run's worker ended with {code}" + (f": {text[-2000:]}" if text else "")


_local = threading.local()
_all: set[Worker] = set()
_lock = threading.Lock()


def carry_out(job: dict, bound: float | None, env: dict[str, str]) -> tuple[dict, bool]:
    """`job` on this thread's worker (started with `env`, which holds no keys); see Worker.ask."""
    worker = getattr(_local, "worker", None)
    if worker is None or not worker.alive():
        if worker is not None:  # ended while idle (its thread's end, a stop): reaped, then replaced
            worker.close()
        worker = _local.worker = Worker(env)
        with _lock:
            _all.add(worker)
    try:
        return worker.ask(job, bound)
    finally:
        if not REUSE or not worker.alive():
            worker.close()
            _local.worker = None


def close_all() -> None:
    """End every worker of this process (the eval's pool is done)."""
    with _lock:
        workers = list(_all)
    for worker in workers:
        worker.close()


__all__ = ["WorkerDied", "carry_out", "close_all"]
