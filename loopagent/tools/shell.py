"""The shell tool: one `bash -c` per call, in the workspace, with a timeout."""

from __future__ import annotations

import os
import signal
import subprocess

from pydantic import BaseModel, Field

from loopagent.messages import ToolResult
from loopagent.tools.base import Tool, ToolContext


class ShellParams(BaseModel):
    command: str = Field(description="bash command line, run in the workspace root")
    timeout: float | None = Field(None, gt=0, le=3600, description="seconds before the command is killed")


class Shell(Tool):
    name = "shell"
    description = (
        "Run a bash command in the workspace root (fresh shell each call, stdin empty). "
        "Returns the exit code and combined output. Use it to run tests and builds."
    )
    params = ShellParams

    def run(self, args: ShellParams, ctx: ToolContext) -> ToolResult:
        timeout = args.timeout or ctx.shell_timeout
        proc = subprocess.Popen(
            ["bash", "-c", args.command], cwd=ctx.workspace.root, env=dict(ctx.env),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            text = out.decode("utf-8", errors="replace")
            return ToolResult.error(f"timed out after {timeout:g} s; process group killed\n{text}")
        text = out.decode("utf-8", errors="replace")
        body = f"exit code {proc.returncode}\n{text}"
        return ToolResult(call_id="", name="", content=body, is_error=proc.returncode != 0)


SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")


def scrubbed_env(environ: dict[str, str], allow: list[str] | tuple[str, ...] = (),
                 secrets: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment a shell command sees: no secret-looking names, no known secret values."""
    kept = {}
    for name, value in environ.items():
        if name not in allow and (
            any(m in name.upper() for m in SECRET_MARKERS) or (value and value in secrets)
        ):
            continue
        kept[name] = value
    return kept
