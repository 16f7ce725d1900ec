"""How a command refuses input: one line on stderr naming the problem and an exit code (under `--json`, a
`result` line too); and the --mcp-config file, read alike by `loop agent`, `loop acp` and `loop mcp list`."""

from __future__ import annotations

import sys
from pathlib import Path

import typer


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print one line naming the problem on stderr and exit with `code`."""
    typer.echo(f"loop: {message}", err=True)
    return typer.Exit(code)


def refuse(message: str, json_out: bool) -> typer.Exit:
    """A run that never started: one line on stderr, exit 2; under --json its `result` line too (DESIGN)."""
    from loopagent.render.safe import printable

    if json_out:
        from loopagent.events import RunEnd
        from loopagent.messages import Usage
        from loopagent.render.jsonl import JsonPrinter

        JsonPrinter(sys.stdout)(RunEnd("error", 0, Usage(), message))
    return fail(printable(message))


def mcp_servers_of(path: Path | None, json_out: bool) -> dict | None:
    """The servers of --mcp-config FILE (a flag, like the user file, may start programs); None without it."""
    if path is None:
        return None
    from loopagent.mcp.settings import read_servers

    try:
        return read_servers(path)
    except ValueError as exc:
        raise refuse(str(exc), json_out) from None
