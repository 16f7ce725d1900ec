"""`loop ARGS` run inside the test process: the same entry (`loopagent.cli.app.run`) the console script
calls, with the process's environment, working directory, arguments and standard streams swapped for the
call and put back after it, so a test pays no interpreter start-up and imports (~0.4 s of CPU a run).

A run that needs a process of its own falls back to one: secrets to conceal (the entry point would
re-execute itself to hide them from /proc). Tests of what only a real process shows (signals, exit-time
hooks, what is left running, the terminal, stdin and stdout as file descriptors) ask for a subprocess
(`run_loop(..., subprocess=True)`).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path


class _Stream(io.StringIO):
    """An output stream with a name and no terminal, as a pipe is."""

    def __init__(self, name: str):
        super().__init__()
        self.name = name

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise io.UnsupportedOperation("fileno")


def needs_process(args: list[str], env: dict[str, str]) -> bool:
    """Whether `loop ARGS` under `env` would re-execute itself to conceal a secret (loopagent/secrets.py)."""
    from loopagent.secrets import is_secret, without_secret_options

    return bool(without_secret_options(list(args))[1]) or any(is_secret(k, v) for k, v in env.items())


def run_in_process(args: list[str], cwd: Path | None, input: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`loop ARGS` in this process; the result as a CompletedProcess, like subprocess.run's."""
    import signal

    from loopagent.cli.app import run

    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    out, err = _Stream(name="<stdout>"), _Stream(name="<stderr>")
    os.environ.clear()
    os.environ.update(env)
    try:
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = ["loop", *args]
        sys.stdin, sys.stdout, sys.stderr = io.TextIOWrapper(io.BytesIO(input.encode()), encoding="utf-8"), out, err
        try:
            code = run(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        for sig, handler in saved_signals.items():
            signal.signal(sig, handler)
    return subprocess.CompletedProcess(["loop", *args], code, out.getvalue(), err.getvalue())
