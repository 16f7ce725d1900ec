"""One run of `loop agent`: prepare the agent from settings and the host, open its session, build the agent,
run the loop (or the front-end's interactive prompt, `Interact`), return the exit code."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from loopagent.errors import UsageError
from loopagent.events import Listener, RunEnd
from loopagent.render.safe import printable
from loopagent.run.build import Built, Host, make_client, scrub_secrets
from loopagent.run.run import Run, open_run, session_failed
from loopagent.run.spec import RunSpec

if TYPE_CHECKING:
    from loopagent.run.interrupts import Trap

__all__ = ["Built", "Host", "Interact", "RunSpec", "UsageError", "make_client", "run_agent", "scrub_secrets"]


class Interact(Protocol):
    """A front-end's interactive prompt over an open run, its stopping signals turned into the running turn's
    cancel by `trap` (cli/repl's `interact`); returns the exit code."""

    def __call__(self, run: Run, trap: Trap) -> int: ...


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

    from loopagent.session import SessionError

    try:
        with open_run(opts, host, [*(listeners or []), keep_end], prompt=interact is not None) as run:
            code = drive(run, interact if run.built.interactive else None)
            if ends and not run.built.interactive:
                report(ends[-1], run.settings, host)
            return code
    except SessionError:  # the session could not be opened: open_run said so and told the listeners (status error)
        return 1


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


def report(end: RunEnd, settings, host: Host) -> None:
    """A run that failed on its server: the error and what to do about it on stderr (stdout may be a pipe)."""
    from loopagent.run.hints import hint_for

    hint = hint_for(end, settings.api_key is not None)
    if hint:
        _, redactor = scrub_secrets(settings, host.environ)
        print(f"loop: error: {printable(redactor.redact(end.message))}", file=host.err)
        print(f"loop: hint: {hint}", file=host.err)


def drive(run: Run, interact: Interact | None = None) -> int:
    """Run the task (or, given `interact`, the REPL) with stopping signals turned into the cancel token.

    SIGINT, SIGTERM and SIGHUP cancel the running turn (run/interrupts.py): the tools stop, the run
    ends `aborted` with its `result` line and session `end`, exit 130 / 143 / 129.
    """
    from loopagent.run.interrupts import Trap
    from loopagent.session import SessionWriteError

    with Trap() as trap:
        if interact is not None:
            return interact(run, trap)
        try:
            with trap.turn() as cancel:
                end = run.turn(None, cancel)
        except SessionWriteError as exc:
            return session_failed(run.agent.listeners, exc, run.host)
    return end.exit_code
