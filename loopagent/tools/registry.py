"""The tool registry: validates untrusted calls and runs them; never raises."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel

from loopagent.cancel import CANCELLED
from loopagent.clip import clip
from loopagent.details import Details
from loopagent.errors import ToolError
from loopagent.messages import ToolCall, ToolResult
from loopagent.tools.base import InvalidArguments, Tool, ToolContext
from loopagent.tools.spec import Resource, ToolSpec

# A result longer than this is clipped head + tail before the model sees it.
MAX_RESULT_CHARS = 60_000


@dataclass(frozen=True)
class Prepared:
    """A call whose tool exists and whose arguments passed the tool's schema.

    `args` is what the tool runs with (its pydantic model, or Arguments); `arguments` the same as a
    JSON object, which is what the policy, the subject and the resource are judged on.
    """

    call: ToolCall
    tool: Tool
    args: BaseModel
    arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> ToolSpec:
        return self.tool.spec()

    @property
    def read_only(self) -> bool:
        """Whether this call only reads (decided per call: an MCP tool's predicate may look at its arguments)."""
        return self.spec.read_only_for(self.arguments)

    @property
    def subject(self) -> str:
        return self.spec.subject_of(self.arguments)

    @property
    def resource(self) -> Resource | None:
        return self.spec.resource_of(self.arguments)

    def preview(self, ctx: ToolContext) -> str:
        """What an approval prompt shows; never raises."""
        try:
            return self.tool.preview(self.args, ctx)
        except Exception:  # a preview's failure must not stop the question
            return self.subject


class Registry:
    def __init__(self, tools: Iterable[Tool]):
        self.tools: dict[str, Tool] = {}
        for tool in tools:
            spec = tool.spec()  # raises ValueError for a name no server accepts
            if spec.name in self.tools:
                raise ValueError(f"two tools are named {spec.name!r}")
            self.tools[spec.name] = tool
        self._specs = tuple(t.spec() for t in self.tools.values())

    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools as data, in the order they are offered; the model client writes its wire form."""
        return self._specs

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
                f"arguments for {call.name} are not valid JSON ({exc.msg.removesuffix(' at')} at position {exc.pos}); "
                "send a JSON object"
            ).answering(call)
        if not isinstance(raw, dict):
            return ToolResult.error(f"arguments for {call.name} must be a JSON object").answering(call)
        try:
            args = tool.validate(raw)
        except InvalidArguments as exc:
            return ToolResult.error(f"invalid arguments for {call.name}: {exc}").answering(call)
        return Prepared(call, tool, args, args.model_dump(mode="json"))

    def resource(self, call: ToolCall) -> Resource | None:
        """What a call of the history reads, writes or runs (for the context's stubs); None for a call
        that names no tool, has invalid arguments, or touches nothing a later call supersedes."""
        prepared = self.prepare(call)
        return None if isinstance(prepared, ToolResult) else prepared.resource

    def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        """Run a prepared call. Tool failures of any kind become error results, secrets [redacted].

        A call whose turn is cancelled before it starts does not run (nothing is written after a Ctrl+C).
        """
        if ctx.cancel.is_set():
            return ToolResult.error(ctx.cancel.said(), Details("cancelled")).answering(prepared.call)
        try:
            result = prepared.tool.run(prepared.args, replace(ctx, call_id=prepared.call.id))
        except ToolError as exc:
            result = ToolResult.error(str(exc), Details("cancelled" if str(exc) == CANCELLED else "error"))
        except Exception as exc:  # a tool bug must not end the run; the model reads what happened
            result = ToolResult.error(f"{prepared.call.name} failed: {type(exc).__name__}: {exc}")
        details = result.details or Details("error" if result.is_error else "ok")
        # Redacted before clipping, so that no clip can cut a secret in two and keep half of it.
        result = replace(result, content=ctx.redact(result.content), display=ctx.redact(result.display),
                         details=replace(details, diff=ctx.redact(details.diff)) if details.diff else details)
        return clip_result(result).answering(prepared.call)


def clip_result(result: ToolResult, limit: int = MAX_RESULT_CHARS) -> ToolResult:
    """Keep head and tail of an oversized result; the end of a traceback must survive."""
    if len(result.content) <= limit:
        return result
    details = replace(result.details or Details("error" if result.is_error else "ok"), clipped=True)
    return replace(result, content=clip(result.content, limit // 2, limit // 2), details=details)
