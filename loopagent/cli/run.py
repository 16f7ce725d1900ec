"""One run of `loop agent`: assemble the parts from settings, run the loop, return the exit code."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from loopagent.config import ConfigError, Settings, load_settings
from loopagent.events import Listener, RunEnd
from loopagent.messages import Message, SystemMessage, Usage, UserMessage


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


def run_agent(opts: RunOptions, listeners: list[Listener] | None = None) -> int:
    """Run one task to its end. Returns the process exit code."""
    from loopagent.loop import Agent, Limits
    from loopagent.policy import Policy
    from loopagent.prompt import system_prompt
    from loopagent.tools import Registry, ToolContext, default_tools
    from loopagent.tools.shell import scrubbed_env
    from loopagent.tools.workspace import Workspace

    if not opts.workspace.is_dir():
        raise UsageError(f"workspace {opts.workspace} is not a directory")
    try:
        settings = load_settings(opts.workspace, opts.flags)
        policy = Policy(settings.approval)
    except (ConfigError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    if not opts.task:
        raise UsageError("give a TASK (the interactive REPL is not available yet)")

    headless = opts.json or not sys.stdin.isatty()
    listeners = list(listeners or [])
    if opts.json:
        from loopagent.render.jsonl import JsonPrinter

        listeners.append(JsonPrinter())
    else:
        from loopagent.render.terminal import PlainRenderer

        listeners.append(PlainRenderer())

    secrets = tuple(s for s in [settings.api_key.get_secret_value() if settings.api_key else ""] if s)
    env = scrubbed_env({**os.environ, **opts.extra_env}, settings.env_allow, secrets)
    registry = Registry(default_tools())
    history: list[Message] = []
    approver = None
    if not headless:
        from loopagent.cli.approve import PromptApprover

        approver = PromptApprover()
    client = make_client(settings, opts.replay)
    agent = Agent(
        model=client, registry=registry,
        tools=ToolContext(Workspace(opts.workspace), env=env, shell_timeout=settings.shell_timeout),
        policy=policy, approver=approver, listeners=listeners,
        limits=Limits(max_steps=settings.max_steps),
    )
    agent.add(history, SystemMessage(system_prompt(list(registry.tools))))
    agent.add(history, UserMessage(opts.task))
    try:
        end = agent.run(history, opts.task)
    except KeyboardInterrupt:
        end = RunEnd("aborted", 0, Usage(), "interrupted by Ctrl+C")
        agent.emit(end)
    return end.exit_code
