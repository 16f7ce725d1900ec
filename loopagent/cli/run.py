"""One run of `loop agent`: assemble the parts from settings, run the loop, return the exit code."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from loopagent.config import ConfigError, Settings, load_config, loop_home
from loopagent.events import Listener, RunEnd
from loopagent.messages import Usage
from loopagent.render.safe import printable
from loopagent.secrets import Redactor, environment, known_secrets, scrubbed_env


class UsageError(Exception):
    """Invalid command-line input: one line for the user, exit 2."""


@dataclass
class RunOptions:
    task: str | None
    workspace: Path
    flags: dict = field(default_factory=dict)  # only what the user gave on the command line
    json: bool = False
    resume: str | None = None
    replay: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    show_thinking: bool = False


def make_client(settings: Settings, replay: Path | None):
    if replay is not None:
        from loopagent.client.replay import ReplayClient

        try:
            return ReplayClient.load(replay)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    from loopagent.client.openai import OpenAIClient

    return OpenAIClient(
        base_url=settings.base_url, model=settings.model,
        api_key=settings.api_key.get_secret_value() if settings.api_key else None,
        max_tokens=settings.max_tokens, retries=settings.retries,
        connect_timeout=settings.connect_timeout, read_timeout=settings.read_timeout,
    )


def scrub_secrets(settings: Settings, extra_env: dict[str, str]) -> tuple[dict[str, str], Redactor]:
    """The shell's environment without secrets, and a redactor of every secret value loop knows."""
    environ = {**environment(), **extra_env}
    api_key = settings.api_key.get_secret_value() if settings.api_key else ""
    env = scrubbed_env(environ, settings.env_allow, (api_key,) if api_key else ())
    return env, Redactor(known_secrets(environ, api_key, settings.base_url))


def sandbox_for(settings: Settings, source: str, opts: RunOptions):
    """The run's sandbox (loopagent/sandbox): bwrap probed once, or the reason it is off or unavailable."""
    from loopagent.sandbox import open_sandbox, spec_from_settings

    environ = {**environment(), **opts.extra_env}
    return open_sandbox(spec_from_settings(settings, opts.workspace, environ), environ, source)


def run_agent(opts: RunOptions, listeners: list[Listener] | None = None) -> int:
    """Run one task to its end. Returns the process exit code."""
    from loopagent.context import ContextWindow
    from loopagent.loop import Agent, Limits
    from loopagent.policy import Policy
    from loopagent.prompt import system_prompt
    from loopagent.tools import Registry, ToolContext, default_tools
    from loopagent.tools.workspace import Workspace

    if not opts.workspace.is_dir():
        raise UsageError(f"workspace {opts.workspace} is not a directory")
    try:
        config = load_config(opts.workspace, opts.flags, environment())
        settings = config.settings
        sandbox = sandbox_for(settings, config.sources["sandbox"], opts)
        # $LOOP_HOME may lie inside the workspace (a workspace at ~): the file tools never write it.
        workspace = Workspace(opts.workspace, protected=(loop_home(environment()),))
        policy = Policy(settings.approval, config.rules, workspace.root, sandbox=sandbox.state,
                        sandbox_problem=sandbox.problem or "", resolve=workspace.real_rel)
    except (ConfigError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    for warning in config.warnings:  # project-file values that would loosen permissions
        print(f"loop: warning: {printable(warning)}", file=sys.stderr)
    if sandbox.verdict:  # unavailable, off or degraded: said once, before anything runs
        print(f"loop: {sandbox.verdict}", file=sys.stderr)
    interactive = not opts.task and not opts.json and sys.stdin.isatty() and sys.stdout.isatty()
    if not opts.task and not interactive and not opts.resume:
        raise UsageError("give a TASK (the interactive REPL needs a terminal)")

    headless = opts.json or not sys.stdin.isatty()
    listeners = list(listeners or [])
    if opts.json:
        from loopagent.render.jsonl import JsonPrinter

        printer = JsonPrinter()
        listeners.append(printer)
    else:
        from loopagent.render.terminal import TerminalRenderer

        renderer = TerminalRenderer(show_thinking=opts.show_thinking)
        listeners.append(renderer)

    env, redactor = scrub_secrets(settings, opts.extra_env)
    registry = Registry(default_tools())
    approver = None
    if not headless:
        from loopagent.cli.approve import PromptApprover

        approver = PromptApprover(show=renderer.show_approval, sandbox=sandbox.executor.describe())
    client = make_client(settings, opts.replay)
    agent = Agent(
        model=client, registry=registry,
        tools=ToolContext(workspace, env=env, shell_timeout=settings.shell_timeout, redact=redactor.redact,
                          executor=sandbox.executor, may_read=policy.may_read,
                          explicitly_allows=policy.explicitly_allows),
        policy=policy, approver=approver, listeners=listeners,
        limits=Limits(max_steps=settings.max_steps, max_tokens_total=settings.max_tokens_total,
                      max_nudges=2 if headless else 0),
        context=ContextWindow(settings.ctx_size, settings.max_tokens),
    )
    from loopagent.cli.record import attach
    from loopagent.session import SessionError

    try:  # the session file (new, or resumed with repairs) and checkpoints; see cli/record.py
        rec = attach(agent, opts.workspace, settings, opts.task, opts.resume,
                     system_prompt(list(registry.tools), workspace=opts.workspace, cwd=Path.cwd(),
                                   limit=settings.instructions_max_bytes), interactive)
    except SessionError as exc:
        return session_failed(agent, exc)
    if opts.json:
        printer.session(rec.id, str(rec.path))
    return drive(agent, rec, settings, renderer if interactive else None)


def drive(agent, rec, settings: Settings, renderer=None) -> int:
    """Run the task (or, given a renderer, the REPL) with stopping signals turned into the cancel token.

    SIGINT, SIGTERM and SIGHUP cancel the running turn (cli/interrupts.py): the tools stop, the run
    ends `aborted` with its `result` line and session `end`, exit 130 / 143 / 129.
    """
    from loopagent.cli.interrupts import Trap
    from loopagent.session import SessionWriteError

    with Trap() as trap:
        if renderer is not None:
            from loopagent.cli.repl import Repl

            return Repl(agent, rec.history, settings, renderer, services=rec.services(), trap=trap).run()
        try:
            with trap.turn() as cancel:
                end = agent.run(rec.history, rec.task, cancel)
        except SessionWriteError as exc:
            return session_failed(agent, exc)
    return end.exit_code


def session_failed(agent, exc: Exception) -> int:
    """A session file that cannot be read or written: one line on stderr, a `result` of status error, exit 1."""
    print(f"loop: {printable(str(exc))}", file=sys.stderr)
    end = RunEnd("error", 0, Usage(), str(exc))
    agent.emit(end)
    return end.exit_code
