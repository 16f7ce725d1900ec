"""A real MCP server for the tests, written with the SDK's FastMCP, run as `sys.executable tests/mcpserver.py`.

MARKER in its environment: a file it appends its pid to on start (proves a server was, or was never,
started); NAPPING: a file `nap` writes when it begins; NOISE: print lines that are not JSON-RPC on stdout
(at start and in `read_note`), as a careless server does.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.fastmcp import FastMCP

server = FastMCP("notes")


@server.tool()
def read_note(name: str) -> str:
    """Read one note by name.

    Notes are short texts kept by the test server.
    """
    if os.environ.get("NOISE"):
        print(f"reading note {name}", flush=True)
    return f"note {name}: buy milk"


@server.tool()
def explode() -> str:
    """Raise an error."""
    raise RuntimeError("the note store exploded")


@server.tool()
def nap(seconds: float) -> str:
    """Sleep for some seconds, then answer."""
    if os.environ.get("NAPPING"):  # the test's gate: the call has reached the server
        with open(os.environ["NAPPING"], "w") as f:
            f.write("napping\n")
    time.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def die() -> str:
    """Kill this server process."""
    os._exit(3)


if __name__ == "__main__":
    marker = os.environ.get("MARKER")
    if marker:
        with open(marker, "a") as f:
            f.write(f"{os.getpid()}\n")
    print("notes server starting", file=sys.stderr)  # goes to the log, never the terminal
    if os.environ.get("NOISE"):
        print("INFO notes server listening on stdio\n{not json", flush=True)
    server.run("stdio")
