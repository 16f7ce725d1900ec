"""`loop config` and `loop policy check`: the effective settings, and the decision for a command."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

Workspace = Annotated[Path, typer.Option("-C", "--workspace", help="Workspace root.")]


def fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"loop: {message}", err=True)
    return typer.Exit(code)


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
        typer.echo(f"loop: warning: {warning}", err=True)
    return config


def config(workspace: Workspace = Path(".")) -> None:
    """Print every effective setting with its source; the API key is masked."""
    from loopagent.config import describe

    rows = describe(load(workspace, {}))
    name_width = max(len(name) for name, _, _ in rows)
    value_width = min(40, max(len(value) for _, value, _ in rows))
    for name, value, source in rows:
        typer.echo(f"{name:<{name_width}}  {value:<{value_width}}  {source}")


policy_app = typer.Typer(help="Test the permission policy.", no_args_is_help=True)


@policy_app.command("check")
def check(
    command: Annotated[str, typer.Argument(help="The shell command to judge, quoted as one argument.")],
    workspace: Workspace = Path("."),
    approval: Annotated[str | None, typer.Option("--approval", help="ask | edits | all (default: configured).")] = None,
) -> None:
    """Print the decision for a shell command and the rule that made it."""
    from loopagent.policy import MODES, Policy

    if approval is not None and approval.lower() not in MODES:
        raise fail(f"--approval must be one of {', '.join(MODES)}, not {approval!r}")
    cfg = load(workspace, {"approval": approval.lower() if approval else None})
    policy = Policy(cfg.settings.approval, cfg.rules, os.path.realpath(workspace))
    decision = policy.check(command)
    typer.echo(decision.verdict)
    if decision.reason:
        typer.echo(f"  reason: {decision.reason}")
    typer.echo(f"  rule:   {decision.rule}")
    typer.echo(f"  mode:   {cfg.settings.approval} ({cfg.sources['approval']})")
    if decision.verdict == "ask":
        typer.echo("  headless (--json or no terminal): deny, no one can approve")


def register(app: typer.Typer) -> None:
    """Add `config` and `policy check` to the `loop` app."""
    app.command()(config)
    app.add_typer(policy_app, name="policy")
