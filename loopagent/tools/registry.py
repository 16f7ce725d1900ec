"""The tool registry: validates untrusted calls and runs them; never raises."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace

from pydantic import BaseModel, ValidationError

from loopagent.cancel import CANCELLED
from loopagent.messages import ToolCall, ToolResult
from loopagent.tools.base import Tool, ToolContext, ToolError

# A result longer than this is clipped head + tail before the model sees it.
MAX_RESULT_CHARS = 60_000


@dataclass(frozen=True)
class Prepared:
    """A call whose tool exists and whose arguments passed the tool's schema."""

    call: ToolCall
    tool: Tool
    args: BaseModel


class Registry:
    def __init__(self, tools: Iterable[Tool]):
        self.tools: dict[str, Tool] = {t.name: t for t in tools}

    def schemas(self) -> list[dict]:
        return [t.schema() for t in self.tools.values()]

    def prepare(self, call: ToolCall) -> Prepared | ToolResult:
        """Check name and arguments; an error result (bound to the call) when they are wrong."""
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.tools))
            return ToolResult.error(f"unknown tool {call.name!r}; available tools: {known}").answering(call)
        try:
            raw = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return ToolResult.error(
                f"arguments for {call.name} are not valid JSON ({exc.msg} at position {exc.pos}); "
                "send a JSON object"
            ).answering(call)
        if not isinstance(raw, dict):
            return ToolResult.error(f"arguments for {call.name} must be a JSON object").answering(call)
        try:
            args = tool.params.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
            )
            return ToolResult.error(f"invalid arguments for {call.name}: {problems}").answering(call)
        return Prepared(call, tool, args)

    def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        """Run a prepared call. Tool failures of any kind become error results, secrets [redacted].

        A call whose turn is cancelled before it starts does not run (nothing is written after a Ctrl+C).
        """
        if ctx.cancel.is_set():
            return ToolResult.error(CANCELLED).answering(prepared.call)
        try:
            result = prepared.tool.run(prepared.args, ctx)
        except ToolError as exc:
            result = ToolResult.error(str(exc))
        except Exception as exc:  # a tool bug must not end the run; the model reads what happened
            result = ToolResult.error(f"{prepared.call.name} failed: {type(exc).__name__}: {exc}")
        # Redacted before clipping, so that no clip can cut a secret in two and keep half of it.
        result = replace(result, content=ctx.redact(result.content), display=ctx.redact(result.display))
        return clip_result(result).answering(prepared.call)


def clip_result(result: ToolResult, limit: int = MAX_RESULT_CHARS) -> ToolResult:
    """Keep head and tail of an oversized result; the end of a traceback must survive."""
    text = result.content
    if len(text) <= limit:
        return result
    head, tail = text[: limit // 2], text[-limit // 2 :]
    dropped = len(text) - len(head) - len(tail)
    marker = f"\n[... {dropped} characters clipped ...]\n"
    return ToolResult(result.call_id, result.name, head + marker + tail, result.is_error, result.display)
