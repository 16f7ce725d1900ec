"""The agent builder: settings and a Host in, a frozen Agent out, with no read of the process's globals.

Everything a run takes from the process it runs in (the environment, $LOOP_HOME, the working
directory, whether stdin and stdout are terminals, the streams, the HTTP transport, the clock)
arrives in one `Host` value. `run_agent` reads the real process once (`Host.current()`); tests
and embedders pass their own, so two agents can run side by side in one process.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from loopagent.config import Config, Settings, load_config, loop_home
from loopagent.errors import ConfigError, UsageError
from loopagent.events import Listener, Notice
from loopagent.render.safe import printable
from loopagent.secrets import Redactor, environment, known_secrets, scrubbed_env

if TYPE_CHECKING:
    from loopagent.context import ContextWindow
    from loopagent.hooks import Hooks
    from loopagent.loop import Agent, Limits
    from loopagent.messages import Usage
    from loopagent.policy import Policy
    from loopagent.run.discovery import Fitted
    from loopagent.run.record import Recording
    from loopagent.run.spec import RunSpec
    from loopagent.tools import Registry, ToolContext


def _is_tty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


@dataclass(frozen=True)
class Host:
    """What a run takes from the process around it, read once at the rim."""

    env: Mapping[str, str]
    home: Path  # $LOOP_HOME: user config, sessions, checkpoints
    cwd: Path
    stdin_tty: bool = False
    stdout_tty: bool = False
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    transport: Any = None  # an httpx.BaseTransport for the model client; None: a real connection
    clock: Callable[[], float] = time.monotonic

    @classmethod
    def current(cls, home: Path | None = None) -> Host:
        """The real process: its environment (secrets included, see secrets.py), terminals and streams."""
        env = environment()
        return cls(env=env, home=home or loop_home(env), cwd=Path.cwd(), stdin_tty=_is_tty(sys.stdin),
                   stdout_tty=_is_tty(sys.stdout), out=sys.stdout, err=sys.stderr)

    @property
    def environ(self) -> dict[str, str]:
        """The environment with LOOP_HOME set to `home`, so config, sandbox and tools agree on it."""
        return {**self.env, "LOOP_HOME": str(self.home)}


@dataclass
class Built:
    """What a run's agent is made of, known before the agent is, and what the run around it needs.

    `assemble` builds the agent, once: after the session it records to is opened (run/record.py), so
    the session's writer, health and checkpoints are part of it from the start.
    """

    config: Config  # as loaded; `fitted` holds the settings in force
    fitted: Fitted  # the settings with the context size resolved, and where that size came from
    interactive: bool  # the REPL: no task, not --json, a terminal on both ends
    model: Any  # the model client
    registry: Registry
    tools: ToolContext  # its `warn` reaches the agent's feed once the agent is built
    policy: Policy
    approver: Any  # None: headless (ASK becomes DENY)
    hooks: Hooks
    limits: Limits
    context: ContextWindow
    price: Callable[[Usage], float | None]
    listeners: tuple[Listener, ...] = ()  # the caller's own
    printer: Any = None  # the JsonPrinter under --json
    renderer: Any = None  # the TerminalRenderer otherwise
    system: str = ""  # the system prompt a new session starts with
    mcp: Any = None  # the MCP servers' hub (loopagent/mcp/client.py), closed with `close()`
    skills: Any = None  # the run's SkillBook (loopagent/skills/): what `$NAME` and load_skill load
    lsp: Any = None  # the language servers' Diagnoser (loopagent/lsp/), closed with `close()`
    agent: Agent | None = None  # built by `assemble`
    children: Any = None  # the `task` tool's spawner (run/child.py), told the session by `assemble`
    output: Any = None  # --output-schema: the OutputSchema the final answer must satisfy (loopagent/output/)

    def close(self) -> None:
        """End what the run started outside the loop: the MCP servers' and language servers' processes, the
        network proxy."""
        if self.mcp is not None:
            self.mcp.close()
        if self.lsp is not None:
            self.lsp.close()
        self.tools.executor.close()

    @property
    def settings(self) -> Settings:
        return self.fitted.settings

    def listeners_for(self, rec: Recording | None) -> tuple[Listener, ...]:
        """The agent's listeners, in the order each event reaches them (`rec`: the session it records to).

        The session file first, so an event is on disk before anything reacts to it (and an unnamed
        interactive session is named right after the first task is written); the hooks' observer, which
        learns the session id the hooks' JSON carries; the caller's listeners; what the person sees (the
        JSON printer or the terminal); with a session, the diagnostics on stderr; last the checkpoint
        recorder, whose snapshot after a call is taken once that call's end is recorded and shown.
        """
        shown = tuple(out for out in (self.printer or self.renderer,) if out is not None)  # none: loop acp
        if rec is None:
            return (self.hooks.observe, *self.listeners, *shown)
        from loopagent.render.notes import StderrNotes
        from loopagent.run.record import Relabel

        session = (rec.writer, Relabel(rec)) if rec.unnamed else (rec.writer,)
        checkpoints = () if rec.checkpoints is None else (rec.checkpoints,)
        return (*session, self.hooks.observe, *self.listeners, *shown, StderrNotes(),
                *checkpoints)

    def assemble(self, rec: Recording | None = None) -> Agent:
        """The run's agent, built once, frozen. With `rec` its session writer stops the run when the file
        cannot be written (`health`) and a checkpoint precedes each change (`before_change`)."""
        from loopagent.loop import Agent, Steering

        if self.agent is not None:
            raise RuntimeError("a run's agent is built once")
        tools = replace(self.tools, warn=lambda text: agent.emit(Notice("warning", text)))  # the tripwire's
        none = Steering()  # what a run without a session, checkpoints or a check has
        steering = Steering(
            approver=self.approver, price=self.price, check=check_for(self.settings, tools, none.check),
            health=none.health if rec is None else rec.writer.health,
            before_change=none.before_change if rec is None or rec.checkpoints is None
            else rec.checkpoints.before_change, skills=none.skills if self.skills is None else self.skills)
        if self.skills is not None and rec is not None:  # a resumed or forked conversation's loaded skills
            self.skills.seen(rec.history)
        agent = Agent(model=self.model, registry=self.registry, tools=tools, policy=self.policy,
                      steering=steering, listeners=self.listeners_for(rec), limits=self.limits,
                      context=self.context, hooks=self.hooks, output=self.output)
        self.agent = agent
        if self.children is not None:
            self.children.rec = rec
        return agent


def configure(opts: RunSpec, host: Host) -> Config:
    """The effective configuration for `opts` under `host`; a bad value raises UsageError (exit 2)."""
    if not opts.workspace.is_dir():
        raise UsageError(f"workspace {opts.workspace} is not a directory")
    try:
        return load_config(opts.workspace, opts.flags.given(), host.environ)
    except ConfigError:
        raise
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def make_client(settings: Settings, replay: Path | None, host: Host | None = None, ctx_size: int | None = None):
    """The model client: a recording to replay, or a server (OpenAI-compatible, or Ollama's own API) over
    `host`'s transport. `ctx_size` is the context size in force (default: the setting when it is a number)."""
    if replay is not None:
        from loopagent.client.replay import ReplayClient

        try:
            return ReplayClient.load(replay)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    from loopagent.client.openai import OpenAIClient

    extra = {"transport": host.transport, "clock": host.clock} if host is not None else {}
    if host is not None:  # what was learned about servers lives in $LOOP_HOME/servers.json
        from loopagent.servers import ServerBook

        extra["servers"] = ServerBook(host.home)
    extra.update(stream_tools=settings.stream_tools, recover_text_calls=settings.recover_text_calls,
                 temperature=settings.temperature, top_p=settings.top_p)
    client = OpenAIClient
    if settings.provider == "ollama":  # its own API: the only way to set the context size (num_ctx)
        from loopagent.client.ollama import OllamaClient

        size = ctx_size if ctx_size is not None else settings.ctx_size
        client, extra["ctx_size"] = OllamaClient, size if isinstance(size, int) else None
    return client(
        base_url=settings.base_url, model=settings.model,
        api_key=settings.api_key.get_secret_value() if settings.api_key else None,
        max_tokens=settings.max_tokens, retries=settings.retries,
        connect_timeout=settings.connect_timeout, read_timeout=settings.read_timeout,
        first_token_timeout=settings.first_token_timeout, **extra,
    )


def scrub_secrets(settings: Settings, environ: Mapping[str, str]) -> tuple[dict[str, str], Redactor]:
    """The shell's environment without secrets, and a redactor of every secret value loop knows."""
    api_key = settings.api_key.get_secret_value() if settings.api_key else ""
    env = scrubbed_env(environ, settings.env_allow, (api_key,) if api_key else ())
    return env, Redactor(known_secrets(environ, api_key, settings.base_url))


def output(opts: RunSpec, host: Host, tools: Any = None) -> tuple[Any, Any]:
    """(JSON printer, terminal renderer) on the host's stdout: the printer under --json, else the renderer
    of the run's `tools` (their specs)."""
    if opts.json:
        from loopagent.render.jsonl import JsonPrinter

        return JsonPrinter(host.out), None
    from loopagent.render.terminal import TerminalRenderer

    return None, TerminalRenderer(host.out, show_thinking=opts.show_thinking, env=host.env, tools=tools)


def hooks_for(settings: Settings, workspace: Path, env: Mapping[str, str]):
    """The user's hooks (user file only, see config.py), run in the workspace with `env` (no secrets)."""
    from loopagent.hooks import Hooks, parse_hooks

    return Hooks(parse_hooks(settings.hooks), cwd=workspace, env=env)


def launch_mcp(settings: Settings, host: Host, workspace: Path) -> Any:
    """The hub of the configured MCP servers, spawned in parallel while the rest of the agent is built;
    None when none are configured (then the SDK is never imported)."""
    if not settings.mcp_servers:
        return None
    from loopagent.mcp import launch_servers

    return launch_servers(settings.mcp_servers, host.home, host.env, workspace)


def mcp_tools_of(hub: Any, host: Host) -> list:
    """The started servers' tools; a server that failed is one warning on `host.err`. `Built.close()` (or
    loop's exit) ends their processes."""
    if hub is None:
        return []
    from loopagent.mcp import server_tools
    from loopagent.tools import default_tools

    tools, warnings = server_tools(hub, [t.name for t in default_tools()])
    for warning in warnings:
        print(f"loop: warning: {printable(warning)}", file=host.err)
    return tools


def mcp_prefixes(settings: Settings) -> list[str]:
    """`mcp__NAME__` of every configured server: rules about its tools load even when it did not start."""
    import re

    return [f"mcp__{re.sub(r'[^A-Za-z0-9_-]', '_', name)}__" for name in settings.mcp_servers]


def skills_for(workspace: Path, host: Host, ctx_size: int):
    """The run's skills (a SkillBook), the load_skill tool when the catalog lists any, and the catalog's
    text; a project skill hiding a user's, and invalid skills, are said on `host.err` once."""
    from loopagent.skills import SkillBook, build_catalog, discover
    from loopagent.skills.tool import skill_tool

    found = discover(workspace, host.home, Path(host.env["HOME"]) if host.env.get("HOME") else None)
    for warning in found.warnings:
        print(f"loop: warning: {printable(warning)}", file=host.err)
    if found.invalid:
        print(f"loop: warning: {len(found.invalid)} skill(s) left out as invalid; `loop skills` says why",
              file=host.err)
    book, catalog = SkillBook(found, workspace), build_catalog(found.skills, ctx_size)
    return book, [skill_tool(book, catalog.listed)] if catalog.listed else [], catalog.text
def diagnoser_for(settings: Settings, root: Path, env: Mapping[str, str], environ: Mapping[str, str]):
    """Language-server diagnostics after edits (loopagent/lsp/), or None when `lsp` is off."""
    if settings.lsp is False:
        return None
    from loopagent.lsp import Diagnoser

    return Diagnoser(root, settings.lsp, env, environ, settings.lsp_timeout, settings.lsp_warnings)


def approver_for(renderer, sandbox, host: Host):
    """The terminal's approver. With stdout redirected the renderer writes to a file: the question and
    its context go to the terminal instead."""
    from loopagent.run.approve import PromptApprover

    return PromptApprover(show=renderer.show_approval if host.stdout_tty else None,
                          sandbox=sandbox.executor.describe())


def limits_for(settings: Settings, headless: bool):
    """The run's limits: steps, tokens, nudges (headless only), check retries, wall-clock time."""
    from loopagent.loop import Limits

    return Limits(max_steps=settings.max_steps, max_tokens_total=settings.max_tokens_total,
                  max_nudges=2 if headless else 0, check_retries=settings.check_retries, time_limit=settings.timeout)


def children_for(host: Host, workspace: Path):
    """The spawner of the run's `task` tool, with the user's and the project's agents (a file that cannot be
    used is one warning on `host.err`)."""
    from loopagent.run.child import Children
    from loopagent.tools.task_agents import load_agents

    agents, warnings = load_agents(host.home, workspace)
    for warning in warnings:
        print(f"loop: warning: {printable(warning)}", file=host.err)
    return Children(agents, host)


def check_for(settings: Settings, tools, none):
    """The configured completion check, run like the shell tool (the same executor, so sandboxed, the
    same env without secrets, the same redactor); `none` when no check is configured."""
    if not settings.check:
        return none
    from loopagent.check import Check

    return Check(settings.check, tools, settings.check_timeout)


def prepare(config: Config, opts: RunSpec, host: Host, listeners: list[Listener] | None = None,
            attended: Any = None, editor: Any = None) -> Built:
    """What an agent for `opts` from `config` is made of, taking from the process only what `host` holds.
    `attended`: the approver of a front-end that asks and shows in its own way, `editor` its editor's
    buffers (loop acp; see `open_run`).

    Raises UsageError for input that cannot run (exit 2). Warnings and the sandbox's verdict go to
    `host.err`, once, before anything runs.
    """
    from loopagent.context import ContextWindow
    from loopagent.policy import policy_for
    from loopagent.policy.rules import check_rules
    from loopagent.prices import pricer
    from loopagent.prompt import COMPACT_BELOW, system_prompt, with_skills
    from loopagent.run import discovery
    from loopagent.sandbox import ReadOnlyWhen, open_sandbox, spec_from_settings
    from loopagent.tools import Registry, ToolContext, default_tools
    from loopagent.tools.task import Task
    from loopagent.tools.workspace import Workspace

    settings = config.settings
    environ = {**host.environ, **opts.extra_env}
    shape = schema_for(config)  # a bad schema file: exit 2 before anything starts
    hub = launch_mcp(settings, host, opts.workspace)  # starting while the rest is built; awaited below
    # a rule shaped like no tool name is a load error, never a shell rule; one about a tool absent now is not
    check_rules(config.rules)
    try:
        sandbox = open_sandbox(spec_from_settings(settings, opts.workspace, environ), environ,
                               config.sources["sandbox"])
        # $LOOP_HOME may lie inside the workspace (a workspace at ~): the file tools never write it.
        workspace = Workspace(opts.workspace, protected=(host.home,), editor=editor)
        builtin = default_tools()
        floor = settings.approval if config.origins.get("approval") == "project" else "all"
        policy = policy_for(settings, config.rules, workspace, sandbox, [t.spec() for t in builtin], floor)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for warning in config.warnings:  # project-file values that would loosen permissions
        print(f"loop: warning: {printable(warning)}", file=host.err)
    if sandbox.verdict:  # unavailable, off or degraded: said once, before anything runs
        print(f"loop: {sandbox.verdict}", file=host.err)
    interactive = attended is None and not opts.task and not opts.json and host.stdin_tty and host.stdout_tty
    if not opts.task and not interactive and attended is None and not opts.resume and not opts.fork:
        raise UsageError("give a TASK (the interactive REPL needs a terminal)")
    headless = attended is None and (opts.json or not host.stdin_tty)
    fitted = discovery.fit(config, host, opts.replay is not None)  # ctx_size auto -> a number, once
    settings = fitted.settings
    env, redactor = scrub_secrets(settings, environ)
    hooks = hooks_for(settings, workspace.root, env)
    children = children_for(host, opts.workspace)
    skills, skill_tools, catalog = skills_for(opts.workspace, host, settings.ctx_size)
    # a window under COMPACT_BELOW (llama.cpp's default 2,048) cannot spare ~400 tokens of every request for
    # a checklist and delegation: it gets the six core tools, as before those two existed
    roomy = settings.ctx_size >= COMPACT_BELOW
    registry = Registry([*(t for t in builtin if roomy or t.name != "todo_write"), *skill_tools,
                         *mcp_tools_of(hub, host), *([Task(children)] if roomy else [])])
    # calls are shown by what their tools do; an attended front-end shows them itself
    printer, renderer = output(opts, host, registry.specs()) if attended is None else (None, None)
    listeners = [*(listeners or ()), *telemetry(settings, environ, sandbox, registry, redactor, host)]
    approver = attended if attended is not None else None if headless else approver_for(renderer, sandbox, host)
    model = make_client(settings, opts.replay, host)
    tools = ToolContext(workspace, env=env, shell_timeout=settings.shell_timeout, redact=redactor.redact,
                        executor=ReadOnlyWhen(sandbox.executor, lambda: policy.mode == "plan"),
                        may_read=policy.may_read, explicitly_allows=policy.explicitly_allows,
                        diagnose=diagnoser_for(settings, workspace.root, env, environ))
    system = with_skills(system_prompt(list(registry.tools), workspace=opts.workspace, cwd=host.cwd,
                                       limit=settings.instructions_max_bytes, ctx_size=settings.ctx_size,
                                       mode=settings.approval), catalog)
    built = Built(config, fitted, interactive, model, registry, tools, policy, approver,
                  hooks, limits_for(settings, headless), ContextWindow(settings.ctx_size, settings.max_tokens),
                  pricer(settings.prices, settings.model), tuple(listeners or ()), printer, renderer, system,
                  mcp=hub, skills=skills, children=children, output=shape, lsp=tools.diagnose)
    children.built = built  # a `task` call makes its child from the parent's parts
    return built


def telemetry(settings: Settings, environ: Mapping[str, str], sandbox, registry, redactor: Redactor,
              host: Host) -> list[Listener]:
    """OpenTelemetry's listener when the user asked for it (loopagent/telemetry/), else none."""
    from loopagent.telemetry import telemetry_for

    walled = frozenset(s.name for s in registry.specs() if s.effect == "exec") if sandbox.state == "sandboxed" \
        else frozenset()
    return telemetry_for(settings, environ, walled, redactor.redact,
                         lambda text: print(f"loop: warning: {printable(text)}", file=host.err))


def schema_for(config: Config) -> Any:
    """The --output-schema (or `output_schema` setting) the final answer must satisfy, checked; None without one."""
    if not config.settings.output_schema:
        return None
    from loopagent.output import load_schema

    source = config.sources.get("output_schema", "")
    return load_schema(config.settings.output_schema, "--output-schema" if source == "command line" else source)
