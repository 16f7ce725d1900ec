"""One run of `loop agent`: prepare the agent from settings and the host, open its session, build the agent,
run the loop (or the front-end's interactive prompt, `Interact`), return the exit code."""

from __future__ import annotations

import sys
from typing import Any, Protocol

from loopagent.errors import UsageError
from loopagent.events import Listener, RunEnd
from loopagent.messages import Usage
from loopagent.render.safe import printable
from loopagent.run.build import Built, Host, configure, make_client, prepare, scrub_secrets
from loopagent.run.preflight import check_window
from loopagent.run.spec import RunSpec

__all__ = ["Built", "Host", "Interact", "RunSpec", "UsageError", "make_client", "run_agent", "scrub_secrets"]


class Interact(Protocol):
    """A front-end's interactive prompt over a run (cli/repl's `interact`); returns the exit code."""

    def __call__(self, agent: Any, rec: Any, settings: Any, renderer: Any, trap: Any) -> int: ...


def run_agent(opts: RunSpec, listeners: list[Listener] | None = None, host: Host | None = None,
              interact: Interact | None = None) -> int:
    """Run one task to its end, or, without a task on a terminal, `interact` (the REPL). Returns the process
    exit code.

    `host` is what the run takes from the process; the real one is read here, once, when none is given.
    """
    host = host or Host.current()
    named_session(opts, host)
    ends: list[RunEnd] = []  # the run's end, for the hint after it

    def keep_end(event) -> None:
        if isinstance(event, RunEnd):
            ends.append(event)

    built = prepare(configure(opts, host), opts, host, [*(listeners or []), keep_end])
    try:
        return run_built(built, opts, host, ends, interact)
    finally:
        built.close()  # the MCP servers end with the run, not at the interpreter's exit


def named_session(opts: RunSpec, host: Host) -> None:
    """A --resume or --fork naming no session here is a bad argument, as for `loop export`: raise UsageError
    (one line, exit 2) before anything starts, rather than a run that ends in error and says it twice."""
    from loopagent.session import SessionError, find
    from loopagent.session.family import fork_spec

    try:
        if spec := opts.resume or (opts.fork and fork_spec(opts.fork)[0]):
            find(host.home, opts.workspace, spec)
    except SessionError as exc:
        raise UsageError(str(exc)) from None


def run_built(built: Built, opts: RunSpec, host: Host, ends: list[RunEnd], interact: Interact | None = None) -> int:
    """The run `prepare` made: its session and agent, the loop or the REPL, the hint after a failure."""
    if built.interactive and interact is None:  # a caller without a prompt of its own
        raise UsageError("give a TASK (the interactive REPL needs a terminal)")
    check_window(built, opts.task)  # before the session file: a run that cannot start leaves nothing behind
    from loopagent.session import SessionError

    try:
        rec = open_session(built, opts, host)
    except SessionError as exc:  # told to the listeners that are not the session's
        return session_failed(built.listeners_for(None), exc, host)
    agent = built.agent
    code = drive(agent, rec, built.settings, (built.renderer, interact) if built.interactive else None, host)
    if ends and not built.interactive:
        report(ends[-1], built.settings, host)
    return code


def report(end: RunEnd, settings, host: Host) -> None:
    """A run that failed on its server: the error and what to do about it on stderr (stdout may be a pipe)."""
    from loopagent.run.hints import hint_for

    hint = hint_for(end, settings.api_key is not None)
    if hint:
        _, redactor = scrub_secrets(settings, host.environ)
        print(f"loop: error: {printable(redactor.redact(end.message))}", file=host.err)
        print(f"loop: hint: {hint}", file=host.err)


def open_session(built: Built, opts: RunSpec, host: Host):
    """The session file (new, or resumed with repairs) and checkpoints (run/record.py), then the agent that
    records to them, built once (`built.agent`), then the session's start said through it. Raises
    SessionError when the session cannot be opened or written."""
    from loopagent.run.record import announce, open_recording

    rec = open_recording(opts.workspace, built.settings, opts.task, opts.resume, built.system, built.interactive,
                         home=host.home, window=built.fitted.window, fork=opts.fork)
    announce(rec, built.assemble(rec))
    return rec


def drive(agent, rec, settings, prompt: tuple[Any, Interact] | None = None, host: Host | None = None) -> int:
    """Run the task (or, given a renderer and a prompt, the REPL) with stopping signals turned into the
    cancel token.

    SIGINT, SIGTERM and SIGHUP cancel the running turn (run/interrupts.py): the tools stop, the run
    ends `aborted` with its `result` line and session `end`, exit 130 / 143 / 129.
    """
    from loopagent.run.interrupts import Trap
    from loopagent.session import SessionWriteError

    with Trap() as trap:
        if prompt is not None:
            renderer, interact = prompt
            return interact(agent, rec, settings, renderer, trap)
        try:
            with trap.turn() as cancel:
                end = agent.run(rec.history, rec.task, cancel, rec.opening)
        except SessionWriteError as exc:
            return session_failed(agent.listeners, exc, host)
    return end.exit_code


def session_failed(listeners: tuple[Listener, ...], exc: Exception, host: Host | None = None) -> int:
    """A session file that cannot be read or written: one line on stderr, a `result` of status error (told to
    `listeners`), exit 1."""
    print(f"loop: {printable(str(exc))}", file=host.err if host is not None else sys.stderr)
    end = RunEnd("error", 0, Usage(), str(exc))
    for listener in listeners:
        listener(end)
    return end.exit_code
