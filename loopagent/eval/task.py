"""One task run, self-contained so it can run on any worker: no shared file system, no driver state.

A `TaskRun` carries the repo as bytes; `run_task` unpacks it into a fresh directory with its own
LOOP_HOME, runs the optional setup, the agent headless under the task's limits (in a worker process that
calls `loopagent.run`, as `loop agent --json` would run it: eval/workers.py), then the check outside the
agent's reach, and returns the result line, the session bytes and the diff.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from loopagent.eval.copies import TAG, run_copy, sweep_once
from loopagent.eval.process import Stopped, run_bounded
from loopagent.eval.tree import diff_trees, pack, unpack
from loopagent.run.spec import Flags

GRACE = 30.0  # seconds past the task's own --timeout before the harness kills the agent itself
TAIL = 2000  # characters of check output kept in the result line
SCRUBBED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")


@dataclass(frozen=True)
class TaskRun:
    id: str
    attempt: int
    prompt: str
    repo: bytes  # a tree.pack tar
    check: str
    setup: str | None = None
    max_steps: int | None = None
    timeout: float | None = None
    check_timeout: float = 600.0
    check_sandbox: str = "workspace-write"  # the check runs code the agent wrote: walled like its shell calls
    replay: bytes | None = None  # recorded turns, written into the run's directory for --replay
    flags: Flags = field(default_factory=Flags)  # the runs' settings given as flags: base URL, model, approval…
    config: bytes | None = None  # the user's config.json (prices, servers) for the run's LOOP_HOME
    environ: dict[str, str] = field(default_factory=dict)  # extra variables for the agent (API keys)

    @property
    def key(self) -> tuple[str, int]:
        return (self.id, self.attempt)


def run_task(spec: TaskRun) -> dict:
    """Carry out one run; {"line": result line, "session": bytes or None, "diff": str}. Raises only for
    harness failures (cannot unpack, cannot start a process) and `Stopped`."""
    started = time.monotonic()
    sweep_once()  # on a Dask worker: copies a killed worker left on this machine
    with run_copy(_safe(spec.id)) as root:
        repo, home = root / "repo", root / "home"
        unpack(spec.repo, repo)
        home.mkdir()
        if spec.config is not None:
            (home / "config.json").write_bytes(spec.config)
        path = interpreter_path()
        line: dict = {"id": spec.id, "attempt": spec.attempt}
        if spec.setup:
            code, out = run_bounded(["bash", "-c", spec.setup], repo, _scrubbed(path, root), spec.check_timeout)
            if code != 0:
                line.update(_failed_setup(code, out))
                return _finish(line, started, None, "")
        unpack(pack(repo), root / "before")  # after setup: the diff is what the agent changed
        agent = _agent(spec, root, repo, home, path)
        line.update(agent["line"])
        diff = diff_trees(root / "before", repo)
        code, out = _check(spec, repo, path)
        line.update(verified=code == 0, check_exit_code=code, check_output=out[-TAIL:])
        return _finish(line, started, agent["session"], diff)


def _agent(spec: TaskRun, root: Path, repo: Path, home: Path, path: str) -> dict:
    """The agent's run, in a worker process of this thread (eval/workers.py) that calls `loopagent.run`."""
    from loopagent.eval.workers import carry_out
    from loopagent.secrets import is_secret

    flags = replace(spec.flags, max_steps=spec.max_steps, timeout=spec.timeout)
    replay = None
    if spec.replay is not None:
        replay = root / "turns.json"
        replay.write_bytes(spec.replay)
    env = {**os.environ, "LOOP_HOME": str(home), "PATH": path, TAG: str(root)}
    secrets = {k: v for k, v in env.items() if is_secret(k, v)}  # in the job, never the worker's environment
    env = {k: v for k, v in env.items() if k not in secrets}
    job = {"prompt": spec.prompt, "repo": str(repo), "home": str(home), "flags": asdict(flags),
           "replay": str(replay) if replay else None, "env": env, "secrets": {**secrets, **spec.environ}}
    bound = spec.timeout + GRACE if spec.timeout is not None else None
    began = time.monotonic()
    reply, killed = carry_out(job, bound, {k: v for k, v in os.environ.items() if k not in secrets})
    agent_s = time.monotonic() - began
    code, out, err = reply["code"], reply["out"], reply["err"]
    events = [_json(text) for text in out.splitlines()]
    session = next((e for e in events if e.get("type") == "session"), {})
    end = next((e for e in reversed(events) if e.get("type") == "result"), None)
    if killed:
        line = {"status": "time_limit", "steps": end.get("steps", 0) if end else 0,
                "message": f"the harness stopped the agent {GRACE:g} s after its --timeout"}
    elif end is None:
        line = {"status": "error", "steps": 0, "message": (err.strip() or "no result line")[-TAIL:]}
    else:
        line = {"status": end.get("status", "error"), "steps": end.get("steps", 0)}
        line.update({k: end[k] for k in ("message", "cost_usd") if k in end})
    line.update(exit_code=code, usage=(end or {}).get("usage", {"prompt_tokens": 0, "completion_tokens": 0}),
                agent_s=round(agent_s, 3))
    session_path = Path(session["path"]) if isinstance(session.get("path"), str) else None
    data = session_path.read_bytes() if session_path is not None and session_path.is_file() else None
    return {"line": line, "session": data}


def _check(spec: TaskRun, repo: Path, path: str) -> tuple[int | None, str]:
    """The task's check in the run's copy, after the agent: the suite's command, but it runs the code the
    agent wrote (a conftest.py, a package's setup), so inside the sandbox its shell calls had (no network),
    unless the eval runs with --sandbox off. Where bwrap cannot run it runs as it is, and says so."""
    from loopagent.config import loop_home
    from loopagent.sandbox.executor import walled_argv

    env = _scrubbed(path, repo.parent)
    # the user's $LOOP_HOME is hidden inside, as for the agent's shell calls
    argv, cleanup, unwalled = walled_argv(spec.check_sandbox, repo, ["bash", "-c", spec.check],
                                          {**env, "LOOP_HOME": str(loop_home())})
    try:
        code, out = run_bounded(argv, repo, env, spec.check_timeout)
    finally:
        cleanup()
    if unwalled not in (None, "off"):
        out += f"\n[loop eval: the check ran unsandboxed: {unwalled}]"
    return code, out


def interpreter_path() -> str:
    """PATH with this interpreter's directory first: `python` in a setup, check or recorded shell call is ours."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def _failed_setup(code: int, out: str) -> dict:
    return {"status": "error", "exit_code": None, "steps": 0, "message": f"setup failed with exit {code}",
            "usage": {"prompt_tokens": 0, "completion_tokens": 0}, "verified": False,
            "check_exit_code": None, "check_output": out[-TAIL:]}


def _finish(line: dict, started: float, session: bytes | None, diff: str) -> dict:
    line["duration_s"] = round(time.monotonic() - started, 3)
    line.setdefault("session", None)  # the driver fills in where it stored the session
    return {"line": line, "session": session, "diff": diff}


def _scrubbed(path: str, root: Path) -> dict[str, str]:
    """The check's and setup's environment: no keys, no LOOP_* settings, this interpreter first on PATH."""
    env = {k: v for k, v in os.environ.items() if k in SCRUBBED}
    env.update(PATH=path, PYTHONDONTWRITEBYTECODE="1")
    env[TAG] = str(root)
    return env


def _json(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:40]


__all__ = ["TaskRun", "Stopped", "interpreter_path", "run_task"]
