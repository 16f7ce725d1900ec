"""The result of a write or an edit: its line, the diff, and what the language server says the
change broke (appended for the model, and in the details for the terminal and --json)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from loopagent.messages import ToolResult
from loopagent.tools.base import ToolContext
from loopagent.tools.diffs import changed


def edit_result(ctx: ToolContext, change: Any, text: str, diff: str) -> ToolResult:
    """`text` and `diff` as the result of `change` (a files.Change already on disk)."""
    details = changed(diff)
    found = ctx.redact(ctx.diagnose(change, ctx)) if ctx.diagnose is not None else ""
    if found:
        text, details = f"{text}\n\n{found}", replace(details, diagnostics=found)
    return ToolResult.ok(text, display=diff, details=details)
