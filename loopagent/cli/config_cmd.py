"""`loop config` and `loop policy check`: the effective settings, and the decision for a command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from loopagent.render.safe import printable

Workspace = Annotated[Path | None, typer.Option(
    "-C", "--workspace", metavar="DIR", show_default=False,
    help="Workspace root. [default: the git repository around the current directory, else it]")]


def fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"loop: {printable(message)}", err=True)
    return typer.Exit(code)


def say(text: str) -> None:
    """Echo text that may hold a repository's or a server's strings, made safe for the terminal."""
    typer.echo(printable(text))


def root_of(workspace: Path | None) -> Path:
    """The workspace `-C` names, else the repository around the cwd (said on stderr when not the cwd)."""
    from loopagent.cli.workspace import find_workspace

    root, why = find_workspace(workspace, Path.cwd())
    if why:
        typer.echo(f"loop: {printable(why)}", err=True)
    return root


def load(workspace: Path, flags: dict):
    """The layered configuration; warnings on stderr; a bad file or value exits 2 with one line."""
    from loopagent.config import ConfigError, load_config

    if not workspace.is_dir():
        raise fail(f"workspace {workspace} is not a directory")
    try:
        config = load_config(workspace, flags)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    for warning in config.warnings:
        typer.echo(f"loop: warning: {printable(warning)}", err=True)
    return config


def check_known(config) -> None:
    """Exit 2 with one line when a rule's shape names no possible tool (it must not become a shell rule);
    a note on stderr for each tool rule that matches no tool known now (built-in or a configured server's)."""
    from loopagent.errors import UsageError
    from loopagent.policy.rules import check_rules, unmatched_rules
    from loopagent.run.build import mcp_prefixes
    from loopagent.tools import default_tools

    try:
        check_rules(config.rules)
    except UsageError as exc:
        raise fail(str(exc)) from None
    for rule in unmatched_rules(config.rules, [t.name for t in default_tools()], mcp_prefixes(config.settings)):
        typer.echo(f"loop: note: {printable(rule.describe())} matches no tool known now (no built-in tool "
                   "and no configured MCP server's); it applies once such a tool exists", err=True)


def sandbox_of(workspace: Path, config):
    """The sandbox a run in `workspace` would get (bwrap probed), for display and for the policy."""
    from loopagent.sandbox import open_sandbox, spec_from_settings
    from loopagent.secrets import environment

    environ = environment()
    spec = spec_from_settings(config.settings, workspace, environ)
    return open_sandbox(spec, environ, config.sources["sandbox"])


def sandbox_line(sandbox) -> str:
    """`sandboxed: workspace writable, no network`, `not sandboxed (off)`, or why it is unavailable."""
    if sandbox.state == "unavailable":
        return f"unavailable ({sandbox.problem}); in mode all shell commands ask"
    return sandbox.executor.describe() + (" (sandbox off)" if sandbox.state == "off" else "")


def config(workspace: Workspace = None) -> None:
    """Print every effective setting with its source; the API key is masked."""
    from loopagent.config import describe

    workspace = root_of(workspace)
    cfg = load(workspace, {})
    check_known(cfg)
    rows = describe(cfg)
    name_width = max(len(name) for name, _, _ in rows)
    value_width = min(40, max(len(value) for _, value, _ in rows))
    for name, value, source in rows:
        say(f"{name:<{name_width}}  {value:<{value_width}}  {source}")
    say(f"sandbox in force: {sandbox_line(sandbox_of(workspace, cfg))}")


policy_app = typer.Typer(help="Test the permission policy.", no_args_is_help=True)


@policy_app.command("check", epilog="""\b
Exit codes:
  0  allow
  3  ask (a headless run denies it)
  4  deny
  2  a bad flag or configuration

\b
Example:
  loop policy check "pytest -q && git push -f" || echo "not without asking"
""")
def check(
    command: Annotated[str, typer.Argument(
        metavar="COMMAND", help="The shell command to judge, quoted as one argument.")],
    workspace: Workspace = None,
    approval: Annotated[str | None, typer.Option(
        "--approval", metavar="MODE", help="ask, edits, all or plan. [default: as configured]")] = None,
    sandbox_mode: Annotated[str | None, typer.Option(
        "--sandbox", metavar="MODE", help="workspace-write, read-only or off. [default: as configured]")] = None,
) -> None:
    """Print the decision for a shell command and the rule that made it.

    Exit 0 allow, 3 ask, 4 deny, so scripts can branch on it (2: a bad flag or config).
    """
    from loopagent.policy import MODES, policy_for

    workspace = root_of(workspace)
    if approval is not None and approval.lower() not in MODES:
        raise fail(f"--approval must be one of {', '.join(MODES)}, not {approval!r}")
    from loopagent.sandbox import MODES as SANDBOX_MODES

    if sandbox_mode is not None and sandbox_mode not in SANDBOX_MODES:
        raise fail(f"--sandbox must be one of {', '.join(SANDBOX_MODES)}, not {sandbox_mode!r}")
    cfg = load(workspace, {"approval": approval.lower() if approval else None, "sandbox": sandbox_mode})
    check_known(cfg)
    sandbox = sandbox_of(workspace, cfg)
    from loopagent.tools import workspace as files

    policy = policy_for(cfg.settings, cfg.rules, files.Workspace(workspace), sandbox)  # as a run builds it
    decision = policy.check(command)  # never raises: what cannot be read asks
    typer.echo(decision.verdict)
    if decision.reason:
        say(f"  reason: {decision.reason}")
    say(f"  rule:   {decision.rule}")
    typer.echo(f"  mode:   {cfg.settings.approval} ({cfg.sources['approval']})")
    say(f"  sandbox: {sandbox_line(sandbox)}")
    if decision.verdict == "ask":
        typer.echo("  headless (--json or no terminal): deny, no one can approve")
    raise typer.Exit(CHECK_EXIT[decision.verdict])


CHECK_EXIT = {"allow": 0, "ask": 3, "deny": 4}


def register(app: typer.Typer) -> None:
    """Add `config` and `policy check` to the `loop` app."""
    app.command(short_help="Print every effective setting with its source.")(config)
    app.add_typer(policy_app, name="policy")
