"""The `loop` command. Heavy modules are imported inside commands to keep start-up fast."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from loopagent.cli import config_cmd, state_cmd

app = typer.Typer(
    name="loop", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    help="A coding agent for any OpenAI-compatible chat-completions server.",
)


def show_version(value: bool) -> None:
    if value:
        from loopagent import __version__

        typer.echo(f"loop {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=show_version,
                                          help="Print the version and exit.")] = False,
) -> None:
    """A coding agent for any OpenAI-compatible chat-completions server."""


class Approval(StrEnum):
    ask = "ask"
    edits = "edits"
    all = "all"


class SandboxMode(StrEnum):
    workspace_write = "workspace-write"
    read_only = "read-only"
    off = "off"


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print one line naming the problem on stderr and exit with `code`."""
    typer.echo(f"loop: {message}", err=True)
    return typer.Exit(code)


Workspace = Annotated[Path, typer.Option("-C", "--workspace", help="Workspace root; file tools are confined to it.")]


@app.command()
def agent(
    task: Annotated[list[str] | None, typer.Argument(help="The task. Without it, start the interactive REPL.")] = None,
    workspace: Workspace = Path("."),
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint.")] = None,
    model: Annotated[str | None, typer.Option("-m", "--model", help="Model name sent to the server.")] = None,
    api_key: Annotated[str | None, typer.Option("--api-key", help="Else LOOP_API_KEY, else OPENAI_API_KEY.")] = None,
    approval: Annotated[Approval | None, typer.Option("--approval", case_sensitive=False,
                                                      help="ask | edits | all (default edits).")] = None,
    max_steps: Annotated[int | None, typer.Option("--max-steps", min=1, help="Model requests before the run stops.")] = None,
    ctx_size: Annotated[int | None, typer.Option("--ctx-size", min=256, help="Context window in tokens.")] = None,
    max_tokens_total: Annotated[int | None, typer.Option(
        "--max-tokens-total", min=1, help="Token budget of the run (prompt + completion); checked before each request.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Headless: JSON lines on stdout, never asks.")] = False,
    resume: Annotated[str | None, typer.Option("--resume", help='Continue a session: "last", an id, or a path.')] = None,
    checkpoints: Annotated[bool | None, typer.Option("--checkpoints/--no-checkpoints",
                                                     help="Snapshot the workspace before changes.")] = None,
    replay: Annotated[Path | None, typer.Option("--replay", help="Take model turns from a recorded file.")] = None,
    show_thinking: Annotated[bool, typer.Option("--show-thinking", help="Show the model's reasoning in full.")] = False,
    sandbox: Annotated[SandboxMode | None, typer.Option(
        "--sandbox", case_sensitive=False, help="workspace-write (default) | read-only | off: where shell commands may write.")] = None,
    network: Annotated[bool, typer.Option("--network", help="Let sandboxed shell commands use the network.")] = False,
) -> None:
    """Run a task in a workspace; without TASK start the interactive REPL."""
    from loopagent.cli.run import RunOptions, UsageError, run_agent

    flags = {
        "base_url": base_url, "model": model, "api_key": api_key,
        "approval": approval.value if approval else None, "max_steps": max_steps,
        "ctx_size": ctx_size, "max_tokens_total": max_tokens_total, "checkpoints": checkpoints,
        "sandbox": sandbox.value if sandbox else None, "sandbox_network": True if network else None,
    }
    opts = RunOptions(
        task=" ".join(task) if task else None, workspace=workspace,
        flags={k: v for k, v in flags.items() if v is not None},
        json=json_out, resume=resume, replay=replay, show_thinking=show_thinking,
    )
    try:
        code = run_agent(opts)
    except UsageError as exc:
        raise fail(str(exc)) from None
    raise typer.Exit(code)


@app.command()
def demo() -> None:
    """Replay the recorded repair of the bundled sample on a temporary copy (no server, no key)."""
    from loopagent.demo.run import run_demo

    raise typer.Exit(run_demo())


state_cmd.register(app)  # sessions, checkpoints, undo, redo
config_cmd.register(app)  # config, policy check


def main() -> None:
    """Console entry point: a usage error is one line on stderr and exit 2, never a traceback."""
    from loopagent.secrets import conceal

    conceal()  # done already via loopagent.__main__; here for console scripts installed before it
    try:
        code = app(prog_name="loop", standalone_mode=False)
    except typer.TyperException as exc:  # typer's own click: UsageError, BadParameter, NoSuchOption...
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
            typer.echo(ctx.get_help())
            code = 0
        else:
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            # a bad value is echoed back: escape it, it may have come from a script or a file
            from loopagent.render.safe import printable

            typer.echo(f"loop: {printable(exc.format_message())}{hint}", err=True)
            code = getattr(exc, "exit_code", 2)
    except (KeyboardInterrupt, typer.Abort):
        code = 130
    except BaseException as exc:  # SIGTERM/SIGHUP outside a turn (cli/interrupts.py): 143 / 129, no traceback
        from loopagent.cli.interrupts import Stopped

        if not isinstance(exc, Stopped):
            raise
        code = 128 + exc.signum
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
