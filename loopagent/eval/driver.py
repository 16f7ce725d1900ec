"""The driver of `loop eval`: the only writer of results.jsonl. It builds one TaskRun per (task, attempt)
not yet recorded, hands them to the local pool or Dask, records each as it ends, then sums up."""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from loopagent.eval.copies import sweep_once
from loopagent.eval.results import Results, mark
from loopagent.eval.suite import Task, digest, load_suite, resumable
from loopagent.eval.task import TaskRun
from loopagent.eval.tree import pack
from loopagent.run.spec import Flags

KEYS = ("LOOP_API_KEY", "OPENAI_API_KEY")  # carried to Dask workers, whose environment is not ours


@dataclass
class EvalOptions:
    suite: Path
    out: Path
    jobs: int = 1
    dask: str | None = None
    repeat: int = 1
    max_steps: int | None = None  # for tasks without their own
    timeout: float | None = None
    flags: Flags = field(default_factory=Flags)  # --base-url, -m, --approval, --sandbox… for every run
    api_key: str | None = field(default=None, repr=False)
    # the checks run the agents' code: walled like their shell calls, the workspace writable (caches,
    # reports) whatever stricter mode the agents had; "off" only when the runs are unsandboxed too
    check_sandbox: str = "workspace-write"  # --api-key when no re-exec took it (secrets.py)


def carried_secrets(api_key: str | None = None) -> dict[str, str]:
    """The key and a credentialed base URL for the runs, in their environment, never their argv (where
    /proc/PID/cmdline shows it): --api-key and such a --base-url were taken out of loop's own argv by the
    re-exec (secrets.py), LOOP_API_KEY and OPENAI_API_KEY out of its os.environ; environment() has them."""
    from loopagent.secrets import environment

    env = environment()
    carried = {k: env[k] for k in KEYS if env.get(k)}
    if key := api_key or env.get("--api-key"):
        carried["LOOP_API_KEY"] = key
    if env.get("--base-url"):
        carried["LOOP_BASE_URL"] = env["--base-url"]
    return carried


def build_specs(tasks: list[Task], opts: EvalOptions, done: set, config: bytes | None) -> list[TaskRun]:
    """A spec per (task, attempt) that `done` does not hold, attempt-major so every task starts early."""
    repos: dict[Path, bytes] = {}
    environ = carried_secrets(opts.api_key)
    specs = []
    for attempt in range(1, opts.repeat + 1):
        for task in tasks:
            if (task.id, attempt) in done:
                continue
            if task.repo not in repos:
                repos[task.repo] = pack(task.repo)
            repo = repos[task.repo]
            specs.append(TaskRun(
                id=task.id, attempt=attempt, prompt=task.prompt, repo=repo, check=task.check, setup=task.setup,
                max_steps=task.max_steps or opts.max_steps, timeout=task.timeout or opts.timeout,
                check_timeout=task.check_timeout, replay=task.replay.read_bytes() if task.replay else None,
                check_sandbox=opts.check_sandbox,
                flags=opts.flags, config=config, environ=environ))
    return specs


def user_config() -> bytes | None:
    """The user's config.json, copied into each run's LOOP_HOME (prices, for the cost)."""
    from loopagent.config import loop_home

    path = loop_home() / "config.json"
    return path.read_bytes() if path.is_file() else None


def run_eval(opts: EvalOptions, console) -> int:
    """Run the suite; 0 when every run was carried out, 1 on a harness failure, 128+N on signal N.
    Raises SuiteError for a bad suite file and MissingDask / ValueError for a bad --dask."""
    from loopagent.eval.progress import Progress
    from loopagent.eval.summary import print_table, summarise, write_report

    tasks = load_suite(opts.suite)
    opts.out.mkdir(parents=True, exist_ok=True)
    results = Results(opts.out)
    resumable(opts.suite, results.path, tasks, results.lines)
    digests = {task.id: digest(task) for task in tasks}
    expected = {task.id: task.expect_skill for task in tasks if task.expect_skill}
    mark(opts.out, opts.suite, digests)
    if not opts.dask and (left := sweep_once()):
        console.print(f"loop eval: removed {len(left)} temporary {'copy' if len(left) == 1 else 'copies'} "
                      "a killed eval left behind", markup=False, highlight=False, soft_wrap=True)
    specs = build_specs(tasks, opts, results.done, user_config())
    total = len(tasks) * opts.repeat
    where = f"dask {opts.dask}" if opts.dask else f"{opts.jobs} at a time"
    console.print(f"loop eval: {len(tasks)} tasks x {opts.repeat}, {len(specs)} to run "
                  f"({total - len(specs)} already recorded), {where}; results: {results.path}",
                  markup=False, highlight=False, soft_wrap=True)
    stop, signals = threading.Event(), []
    failures: list[str] = []
    started = time.monotonic()
    with Progress(console, total, total - len(specs)) as progress, _trapped(stop, signals):
        def done(outcome: dict) -> None:
            if not stop.is_set():  # after a stop nothing more is written: those runs are redone on resume
                outcome["line"]["task_digest"] = digests[outcome["line"]["id"]]
                if skill := expected.get(outcome["line"]["id"]):  # did the run load the skill it should have?
                    from loopagent.skills.book import loaded_in_session

                    outcome["line"]["skill_loaded"] = skill in loaded_in_session(outcome.get("session") or b"")
                progress.ran(results.record(outcome))

        def failed(spec: TaskRun, error: BaseException) -> None:
            failures.append(spec.id)
            progress.failed(spec.key, f"{type(error).__name__}: {error}")

        try:
            _backend(specs, opts, done, failed, stop)
        except KeyboardInterrupt:  # Ctrl+C on a terminal: the pool has ended its runs; say how to go on
            stop.set()
            signals.append(signal.SIGINT)
    if signals:
        console.print(f"loop eval: stopped by signal {signals[0]}; resume with --resume {opts.out}",
                      markup=False, highlight=False, soft_wrap=True)
        return 128 + signals[0]
    asked = [line for line in results.lines if line["attempt"] <= opts.repeat]  # a resume may ask fewer
    summary = summarise(asked, time.monotonic() - started, opts.repeat)
    print_table(summary, console)
    report = write_report(opts.out, opts.suite, summary, asked)
    console.print(f"report: {report}", markup=False, highlight=False, soft_wrap=True)
    return 1 if failures else 0


def _backend(specs, opts: EvalOptions, done, failed, stop) -> None:
    if not specs:
        return
    if opts.dask:
        from loopagent.eval.cluster import run_dask

        run_dask(specs, opts.dask, done, failed, stop)
    else:
        from loopagent.eval.pool import run_local

        run_local(specs, opts.jobs, done, failed, stop)


class _trapped:
    """SIGTERM/SIGHUP set `stop` (the pool then ends its children); restored on exit."""

    def __init__(self, stop: threading.Event, signals: list[int]):
        self.stop, self.signals, self.saved = stop, signals, {}

    def __enter__(self):
        for signum in (signal.SIGTERM, signal.SIGHUP):
            self.saved[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        self.signals.append(signum)
        self.stop.set()

    def __exit__(self, *exc: object) -> None:
        for signum, old in self.saved.items():
            signal.signal(signum, old)
