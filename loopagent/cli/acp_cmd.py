"""`loop acp`: loop as an Agent Client Protocol agent on stdio (loopagent/acp/); the SDK is imported only here."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Option = typer.Option


def register(app: typer.Typer) -> None:
    app.command("acp", short_help="An Agent Client Protocol agent on stdio (Zed, Neovim, acpx).")(acp)


def acp(
    workspace: Annotated[Path | None, Option("-C", "--workspace", metavar="DIR", show_default=False,
                                             help="Where settings are read from before a session names its own "
                                                  "directory (each session's cwd is its workspace).")] = None,
    base_url: Annotated[str | None, Option("--base-url", metavar="URL", help="OpenAI-compatible endpoint.")] = None,
    model: Annotated[str | None, Option("-m", "--model", metavar="NAME", help="Model name sent to the server.")] = None,
    api_key: Annotated[str | None, Option("--api-key", metavar="KEY", help="API key. Never printed.")] = None,
    approval: Annotated[str | None, Option("--approval", metavar="MODE",
                                           help="The mode a new session starts in: ask, edits or all.")] = None,
    max_steps: Annotated[int | None, Option("--max-steps", metavar="N", help="Model requests per prompt.")] = None,
    ctx_size: Annotated[str | None, Option("--ctx-size", metavar="auto|TOKENS", help="Context window.")] = None,
    timeout: Annotated[float | None, Option("--timeout", metavar="SECONDS", help="Wall-clock limit per prompt.")] = None,
    sandbox: Annotated[str | None, Option("--sandbox", metavar="MODE",
                                          help="workspace-write, read-only or off.")] = None,
    network: Annotated[bool, Option("--network", help="Let sandboxed shell commands use the network.")] = False,
    provider: Annotated[str | None, Option("--provider", metavar="NAME", help="openai or ollama.")] = None,
    checkpoints: Annotated[bool | None, Option("--checkpoints/--no-checkpoints", show_default=False,
                                               help="Snapshot the workspace before changes. [default: on]")] = None,
    mcp_config: Annotated[Path | None, Option("--mcp-config", metavar="FILE", help="MCP servers for every session.")] = None,
) -> None:
    """Speak the Agent Client Protocol on stdin/stdout, so an editor drives loop.

    Only protocol messages go to stdout; diagnostics go to stderr and $LOOP_HOME/logs/acp.log.
    """
    from loopagent.cli.refusal import fail, mcp_servers_of
    from loopagent.config import loop_home
    from loopagent.policy import MODES
    from loopagent.run.spec import Flags

    if approval is not None and approval.lower() not in MODES:
        raise fail(f"--approval must be one of {', '.join(MODES)}, not {approval!r}")
    if ctx_size is not None and not (ctx_size.isdigit() or ctx_size == "auto"):
        raise fail(f"--ctx-size must be auto or a number of tokens, not {ctx_size!r}")
    if workspace is not None and not workspace.is_dir():
        raise fail(f"workspace {workspace} is not a directory")
    flags = Flags(
        base_url=base_url, model=model, api_key=api_key, approval=approval.lower() if approval else None,
        max_steps=max_steps, ctx_size=int(ctx_size) if ctx_size and ctx_size.isdigit() else ctx_size,
        sandbox=sandbox.lower() if sandbox else None, sandbox_network=True if network else None,
        provider=provider.lower() if provider else None, checkpoints=checkpoints,
        mcp_servers=mcp_servers_of(mcp_config, False), timeout=timeout)
    from loopagent.config import load_config
    from loopagent.errors import ConfigError

    try:  # a bad flag or config is one line now, not an error at each session/new
        load_config((workspace or Path.cwd()).resolve(), flags.given())
    except (ConfigError, ValueError) as exc:
        raise fail(str(exc)) from None
    from loopagent.acp.agent import Defaults
    from loopagent.acp.serve import serve

    raise typer.Exit(serve(Defaults(flags, workspace), loop_home()))
