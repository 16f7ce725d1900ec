"""A run's worker process: `python -P -m loopagent.eval.worker`, started by eval/workers.py outside any
workspace. It reads one job per line on stdin (JSON: the task, its copy, home, flags and environment),
carries the agent run out in this process through `loopagent.run` (no `loop agent` child), and writes
one reply line: the exit code and what `loop agent --json` would have printed on stdout and stderr.

Jobs run one at a time on the main thread (signals reach the run's cancel, as in `loop agent`), so for
the run this process may take on the job's environment and working directory whole: the few readers of
os.environ beneath the run (the sandbox probe, the checkpoints' git) see what a fresh process would. The
keys arrive in the job, never in this process's own environment or argv. `-P` keeps the working
directory (a model-written `bashlex.py` in the copy) off sys.path for every import, lazy ones included.
"""

from __future__ import annotations

import io
import json
import os
import sys
import traceback
from pathlib import Path

HOME_DIR = "/"  # the working directory between jobs: no workspace (its copy is removed after the job)


def serve() -> None:
    """Answer jobs until stdin ends. The protocol's pipes move off fds 0 and 1 first: what the run or a
    stray print writes to stdout goes to stderr, and nothing the run starts can read a job."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    sys.modules.setdefault("httpx._main", None)  # as __main__ does: httpx's own CLI is never used
    warm()
    base = dict(os.environ)
    for line in requests:
        try:
            reply = carry_out(json.loads(line))
        finally:
            os.chdir(HOME_DIR)
            os.environ.clear()
            os.environ.update(base)
        replies.write(json.dumps(reply).encode("utf-8") + b"\n")
        replies.flush()


def warm() -> None:
    """Import what every run needs once, before the first job: a job then pays only for its run."""
    import loopagent.client.openai  # noqa: F401
    import loopagent.loop  # noqa: F401
    import loopagent.render.jsonl  # noqa: F401
    import loopagent.run.launch  # noqa: F401
    import loopagent.run.record  # noqa: F401
    import loopagent.tools  # noqa: F401

def carry_out(job: dict) -> dict:
    """One agent run for `job`: {"code", "out", "err"} as `loop agent --json` would have left them."""
    from loopagent.errors import UsageError
    from loopagent.run.launch import Host, run_agent
    from loopagent.run.spec import Flags, RunSpec

    repo, out, err = Path(job["repo"]), io.StringIO(), io.StringIO()
    os.environ.clear()
    os.environ.update(job["env"])  # without the keys, like a `loop` process after conceal()
    os.chdir(repo)
    host = Host(env={**job["env"], **job["secrets"]}, home=Path(job["home"]), cwd=repo, out=out, err=err)
    spec = RunSpec(task=job["prompt"], workspace=repo, flags=Flags(**job["flags"]), json=True,
                   replay=Path(job["replay"]) if job.get("replay") else None)
    try:
        code = run_agent(spec, host=host)
    except UsageError as exc:  # as `loop agent --json` refuses: the result line, one line on stderr, exit 2
        code = refuse(str(exc), out, err)
    except Exception:  # a harness bug: the run's error, with its traceback for whoever reads the results
        code = 1
        err.write(traceback.format_exc())
    return {"code": code, "out": out.getvalue(), "err": err.getvalue()}


def refuse(message: str, out: io.StringIO, err: io.StringIO) -> int:
    from loopagent.events import RunEnd
    from loopagent.messages import Usage
    from loopagent.render.jsonl import JsonPrinter
    from loopagent.render.safe import printable

    JsonPrinter(out)(RunEnd("error", 0, Usage(), message))
    err.write(f"loop: {printable(message)}\n")
    return 2


if __name__ == "__main__":
    serve()
