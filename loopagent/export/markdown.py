"""A transcript as Markdown: headings per message, code fences for calls, results and diffs.

Every untrusted text goes into a fence longer than any backtick run inside it (so nothing closes
it early) or, for prose, has its terminal controls made visible; thinking is folded in <details>.
"""

from __future__ import annotations

import re

from loopagent.export.transcript import (
    Transcript,
    arguments,
    diff_of,
    outcome,
    record_line,
    shown,
    total_line,
)
from loopagent.messages import AssistantMessage, SystemMessage, ToolResult, UserMessage
from loopagent.render.safe import printable


def fenced(text: str, lang: str = "") -> str:
    """`text` in a code fence no line of it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip(chr(10))}\n{fence}"


# A link reference definition (`[r]: javascript:...`) at the start of a line: the target of `[r]` and `![r]`.
DEFINITION = re.compile(r"^( {0,3})\[(?=[^\]\n]*\]:)", re.MULTILINE)


def prose(text: str) -> str:
    """Message text as Markdown (it usually is), with controls visible, no raw HTML tag taking effect and
    no link or image: a shared transcript's viewer would follow `javascript:` or fetch a tracking image
    whose address carries what the model put in it."""
    text = printable(text).replace("<", "&lt;").replace("](", "]\\(")
    return DEFINITION.sub(r"\1\\[", text).strip()


def markdown(t: Transcript) -> str:
    """The whole transcript as one Markdown document."""
    head = t.header
    out = [f"# Session {prose(t.id)}", ""]
    facts = [("task", t.task.split("\n", 1)[0]), ("model", head.get("model")), ("created", head.get("created")),
             ("workspace", head.get("workspace"))]
    if isinstance(head.get("parent"), dict):
        facts.append(("forked from", f"{head['parent'].get('session')} at message {head['parent'].get('message')}"))
    out += [f"- **{name}**: {prose(str(value))}" for name, value in facts if value]
    out.append("")
    for item in t.items:
        out += block(t, item)
    out += ["## Result", "", f"**status**: {prose(t.status)}" + (f": {prose(t.status_message)}" if t.status_message
                                                                  else ""), ""]
    for check in t.checks:
        out += [f"- {prose(record_line(check))}"]
        if check.get("output"):
            out += ["", fenced(shown(str(check["output"]))), ""]
    out += [f"**totals**: {prose(total_line(t.totals))}", ""]
    return "\n".join(out)


def block(t: Transcript, item: object) -> list[str]:
    """The lines of one message or record."""
    if isinstance(item, dict):
        return [f"> {prose(record_line(item))}", ""]
    if isinstance(item, SystemMessage):
        return ["<details><summary>system prompt</summary>", "", fenced(shown(item.content)), "", "</details>", ""]
    if isinstance(item, UserMessage):
        return ["## User", "", prose(item.content), ""]
    if isinstance(item, AssistantMessage):
        out = ["## Assistant", ""]
        if item.thinking:
            out += ["<details><summary>thinking</summary>", "", fenced(printable(item.thinking)), "", "</details>", ""]
        if item.text.strip():
            out += [prose(item.text), ""]
        for call in item.tool_calls:
            out += [f"**call** `{printable(call.name)}` ({printable(call.id)})", "", fenced(printable(arguments(call)), "json"), ""]
        return out
    if isinstance(item, ToolResult):
        out = [f"**result** of `{printable(item.name)}`: {prose(outcome(item))}", ""]
        if diff := diff_of(item):
            out += [fenced(diff, "diff"), ""]
        else:
            out += [fenced(shown(item.content)), ""]
        return out
    return []
