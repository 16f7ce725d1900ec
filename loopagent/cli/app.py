"""The `loop` command. Heavy modules are imported inside commands to keep start-up fast."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from loopagent.cli import (
    acp_cmd,
    config_cmd,
    eval_cmd,
    export_cmd,
    mcp_cmd,
    replay_cmd,
    review_cmd,
    skills_cmd,
    state_cmd,
)
from loopagent.cli.refusal import mcp_servers_of, refuse
from loopagent.cli.shell_words import approval_modes, session_ids

app = typer.Typer(
    name="loop", no_args_is_help=True, pretty_exceptions_enable=False,
    # plain click help: it wraps at 80 columns without cutting option names, and needs no rich at start-up
    rich_markup_mode=None,
    help="A coding agent for any OpenAI-compatible chat-completions server.",
)

# Settings' defaults as the help shows them; tests/cli/test_help.py holds them to loopagent.config.
DEFAULTS = {
    "base_url": "http://127.0.0.1:8080/v1", "model": "default", "approval": "edits", "max_steps": 30,
    "ctx_size": "auto", "sandbox": "workspace-write", "provider": "openai",
}

EPILOG = """\b
Examples:
  loop agent "make the failing test pass"
  loop agent --json -C ~/src/app --approval all "add type hints" > run.jsonl
  echo "explain main.py" | loop agent

\b
Exit codes:
  0    the model finished with a final answer (not proof the task is done)
  1    error outside the model's control: server, stream, session file
  2    invalid command-line input
  3    a limit stopped the run: steps, tokens, repeated identical calls
  4    a call needed approval in headless mode and was denied
  5    the model finished but the --check command still fails
  6    the final answer is not valid against --output-schema
  130  interrupted by Ctrl+C (143 SIGTERM, 129 SIGHUP)
"""


def show_version(value: bool) -> None:
    if value:
        from loopagent import __version__

        typer.echo(f"loop {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Annotated[bool, typer.Option("-V", "--version", is_eager=True, callback=show_version,
                                          help="Print the version and exit.")] = False,
) -> None:
    """A coding agent for any OpenAI-compatible chat-completions server."""


def default(name: str) -> str:
    return f"[default: {DEFAULTS[name]}]"


Workspace = Annotated[Path | None, typer.Option(
    "-C", "--workspace", metavar="DIR", show_default=False,
    help="Workspace root; file tools are confined to it. [default: the git repository around the "
         "current directory, else the current directory]")]


# described in the docstring: typer would show its type as <list[str]>
Task = Annotated[list[str] | None, typer.Argument(metavar="TASK", show_default=False, hidden=True)]
TokensTotal = Annotated[int | None, typer.Option(
    "--max-tokens-total", metavar="TOKENS",
    help="Token budget of the run (prompt + completion), checked before each request. [default: none]")]
Checkpoints = Annotated[bool | None, typer.Option(
    "--checkpoints/--no-checkpoints", show_default=False, help="Snapshot the workspace before changes. [default: on]")]
Sandbox = Annotated[str | None, typer.Option(
    "--sandbox", metavar="MODE",
    help=f"Where shell commands may write: workspace-write, read-only or off. {default('sandbox')}")]


McpConfig = mcp_cmd.McpConfig
Resume = Annotated[str | None, typer.Option(
    "--resume", metavar="SESSION", help='Continue a saved session: "last", an id, or a path.',
    autocompletion=session_ids)]
Replay = Annotated[Path | None, typer.Option(
    "--replay", metavar="FILE", help="Take model turns from a recorded file or a session file instead of a server.")]
Check = Annotated[str | None, typer.Option(
    "--check", metavar="CMD",
    help="After the final answer run CMD in the workspace; if it fails its output goes back to the model. "
         "The run is done only when it passes (else exit 5).")]
CheckRetries = Annotated[int | None, typer.Option(
    "--check-retries", metavar="N", help="How often a failing check goes back to the model. [default: 2]")]
AllowHost = Annotated[list[str] | None, typer.Option(
    "--allow-host", metavar="HOST",
    help="Let sandboxed commands reach HOST (*.DOMAIN, HOST:PORT, or pypi, npm, debian, github) through "
         "loop's proxy; repeatable, added to network_allow.")]
Timeout = Annotated[float | None, typer.Option(
    "--timeout", metavar="SECONDS", help="Wall-clock limit of the run (status time_limit, exit 3). [default: none]")]
# Output for programs (loopagent/output/)
OutputSchema = Annotated[Path | None, typer.Option(
    "--output-schema", metavar="FILE",
    help="The final answer must be JSON valid against this JSON Schema (asked once more with the schema as "
         "response_format when it is not; else exit 6). The value is the result line's \"output\".")]
OutputFile = Annotated[Path | None, typer.Option(
    "-o", "--output", metavar="FILE", help="Write the final answer (with --output-schema, its JSON) to FILE.")]
Fork = Annotated[str | None, typer.Option(
    "--fork", metavar="SESSION[:N]",
    help="Start a new session from SESSION (up to its message N); the parent is kept.", autocompletion=session_ids)]


@app.command(epilog=EPILOG, short_help="Run a task, or start the interactive REPL.")
def agent(
    task: Task = None,
    workspace: Workspace = None,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", metavar="URL", help=f"OpenAI-compatible endpoint. {default('base_url')}")] = None,
    model: Annotated[str | None, typer.Option(
        "-m", "--model", metavar="NAME", help=f"Model name sent to the server. {default('model')}")] = None,
    api_key: Annotated[str | None, typer.Option(
        "--api-key", metavar="KEY", help="API key; else LOOP_API_KEY, else OPENAI_API_KEY. Never printed.")] = None,
    approval: Annotated[str | None, typer.Option(
        "--approval", metavar="MODE", help=f"What runs without asking: ask, edits, all, or plan (change nothing). {default('approval')}",
        autocompletion=approval_modes)] = None,
    max_steps: Annotated[int | None, typer.Option(
        "--max-steps", metavar="N", help=f"Model requests before the run stops. {default('max_steps')}")] = None,
    ctx_size: Annotated[str | None, typer.Option(
        "--ctx-size", metavar="auto|TOKENS",
        help=f"Context window the history must fit in; auto asks the server, else 16384. {default('ctx_size')}",
    )] = None,
    max_tokens_total: TokensTotal = None, mcp_config: McpConfig = None,
    check: Check = None, check_retries: CheckRetries = None, timeout: Timeout = None, fork: Fork = None,
    output_schema: OutputSchema = None, output_file: OutputFile = None,
    json_out: Annotated[bool, typer.Option("--json", help="Headless: JSON lines on stdout, never asks.")] = False,
    resume: Resume = None, checkpoints: Checkpoints = None, replay: Replay = None,
    show_thinking: Annotated[bool, typer.Option("--show-thinking", help="Show the model's reasoning in full.")] = False,
    sandbox: Sandbox = None,
    no_lsp: Annotated[bool, typer.Option("--no-lsp", help="No language-server diagnostics after edits.")] = False,
    network: Annotated[bool, typer.Option("--network", help="Let sandboxed shell commands use the network.")] = False,
    allow_host: AllowHost = None,
    provider: Annotated[str | None, typer.Option(
        "--provider", metavar="NAME",
        help=f"openai (any chat-completions server) or ollama (native /api/chat). {default('provider')}")] = None,
) -> None:
    """Run TASK in a workspace; without one, start the interactive REPL.

    TASK is the rest of the command line, or what is piped on stdin (then the run is headless:
    a call that needs approval is denied).
    """
    from loopagent.cli.workspace import find_workspace
    from loopagent.run.launch import UsageError, run_agent
    from loopagent.run.preflight import piped_task
    from loopagent.run.spec import Flags, RunSpec

    flags = Flags(
        base_url=base_url, model=model, api_key=api_key, approval=approval.lower() if approval else None,
        max_steps=max_steps, ctx_size=int(ctx_size) if ctx_size and ctx_size.isdigit() else ctx_size,
        max_tokens_total=max_tokens_total, checkpoints=checkpoints, sandbox=sandbox.lower() if sandbox else None,
        sandbox_network=True if network else None, provider=provider.lower() if provider else None,
        mcp_servers=mcp_servers_of(mcp_config, json_out), check=check, check_retries=check_retries, timeout=timeout,
        output_schema=str(output_schema.resolve()) if output_schema else None,
        lsp=False if no_lsp else None,
        network_allow=list(allow_host) if allow_host else None,
    )
    root, why = find_workspace(workspace, Path.cwd())
    text = " ".join(task) if task else piped_task(getattr(sys.stdin, "buffer", None))
    opts = RunSpec(task=text, workspace=root, flags=flags, json=json_out, resume=resume, replay=replay,
                   show_thinking=show_thinking, fork=fork)
    if why:
        typer.echo(f"loop: {why}", err=True)
    try:
        code = run_agent(opts, listeners=answer_file(output_file), interact=start_repl)
    except UsageError as exc:
        raise refuse(str(exc), json_out) from None
    raise typer.Exit(code)


def answer_file(path: Path | None) -> list:
    """`-o FILE`'s listener (none without it); FILE is named from the directory loop was started in."""
    if path is None:
        return []
    from loopagent.output.answer import AnswerFile

    return [AnswerFile(path.resolve())]


def start_repl(run, trap) -> int:
    """The REPL for a run without a task; prompt_toolkit is imported only then."""
    from loopagent.cli.repl.repl import interact

    return interact(run, trap)


@app.command()
def demo() -> None:
    """Replay a recorded repair of a sample (no server, no key).

    The bundled sample repository is copied to a temporary directory and its recorded model turns
    run with the real tools.
    """
    from loopagent.demo.run import run_demo

    raise typer.Exit(run_demo())


@app.command()
def doctor(
    base_url: Annotated[str | None, typer.Option(
        "--base-url", metavar="URL", help=f"OpenAI-compatible endpoint. {default('base_url')}")] = None,
    model: Annotated[str | None, typer.Option(
        "-m", "--model", metavar="NAME", help=f"Model name sent to the server. {default('model')}")] = None,
    provider: Annotated[str | None, typer.Option(
        "--provider", metavar="NAME", help="openai (any chat-completions server) or ollama. [default: openai]")] = None,
    api_key: Annotated[str | None, typer.Option(
        "--api-key", metavar="KEY", help="API key; else LOOP_API_KEY, else OPENAI_API_KEY. Never printed.")] = None,
    workspace: Workspace = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object on stdout instead of the table.")] = False,
) -> None:
    """Probe a model server: can loop work with it, and with which settings.

    At most four short chat requests (streamed text, a streamed and an unstreamed tool call, a reply
    shaped by a JSON Schema) plus
    the model list and the context size; exit 0 when loop can work with the server, 1 when not.
    """
    from loopagent.cli.config_cmd import root_of
    from loopagent.cli.doctor import run_doctor

    flags = {"base_url": base_url, "model": model, "api_key": api_key, "provider": provider}
    raise typer.Exit(run_doctor({k: v for k, v in flags.items() if v is not None}, root_of(workspace), json_out))


state_cmd.register(app)  # sessions, checkpoints, undo, redo
config_cmd.register(app)  # config, policy check
mcp_cmd.register(app)  # mcp list
export_cmd.register(app)  # export
replay_cmd.register(app)  # replay
eval_cmd.register(app)  # eval
review_cmd.register(app)  # review
skills_cmd.register(app)  # skills
acp_cmd.register(app)  # acp


def explain(exc: typer.TyperException, argv: list[str]) -> int:
    """Typer's parse error in `argv` as one line on stderr (a bare `loop`: the help, once); returns the exit
    code."""
    message = exc.format_message()
    if type(exc).__name__ == "NoArgsIsHelpError":  # its message is the help text
        typer.echo(message)
        return 0
    param = getattr(exc, "param", None)
    errors = getattr(exc.__cause__, "errors", None)
    if param is not None and callable(errors):  # a value typer checked with pydantic: say what is allowed
        from loopagent.errors import invalid_value

        message = invalid_value(max(param.opts, key=len), errors()[0])
    ctx = getattr(exc, "ctx", None)
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    refuse(message + hint, json_requested(argv))  # printable: the value may come from a script
    return getattr(exc, "exit_code", 2)


def json_requested(argv: list[str]) -> bool:
    """Whether argv asks `loop agent` for --json: then even a flag typer refused ends with a `result` line."""
    words = argv[: argv.index("--")] if "--" in argv else argv
    commands = [w for w in words if not w.startswith("-")]
    return bool(commands) and commands[0] == "agent" and "--json" in words


def main() -> None:
    """Console entry point: a usage error is one line on stderr and exit 2, never a traceback."""
    from loopagent.secrets import conceal

    conceal()  # done already via loopagent.__main__; here for console scripts installed before it
    sys.exit(run(sys.argv[1:]))


def run(argv: list[str]) -> int:
    """`loop ARGV` in this process, its secrets already concealed; returns the exit code."""
    try:
        code = app(args=argv, prog_name="loop", standalone_mode=False)
    except typer.TyperException as exc:  # typer's own click: UsageError, BadParameter, NoSuchOption...
        code = explain(exc, argv)
    except (KeyboardInterrupt, typer.Abort):
        code = 130
    except BaseException as exc:  # SIGTERM/SIGHUP outside a turn (run/interrupts.py): 143 / 129, no traceback
        from loopagent.run.interrupts import Stopped

        if not isinstance(exc, Stopped):
            raise
        code = 128 + exc.signum
    return code if isinstance(code, int) else 0

if __name__ == "__main__":
    main()
