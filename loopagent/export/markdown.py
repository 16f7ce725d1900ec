"""A transcript as Markdown: headings per message, code fences for calls, results and diffs.

Nothing the model, a tool or a handed-over session chose may become a link, an image or raw HTML
in a viewer (a `javascript:` link, a tracking image whose address carries what the model put in
it, an `onerror` attribute). So: ids and tool names are code spans; one-line facts and records have
every Markdown character escaped; message text keeps its Markdown (headings, emphasis, lists,
tables, code) but every `[` and `<` outside code blocks is made inert, and its code blocks are
re-fenced by us, so no text can close them early. Terminal controls are made visible everywhere.
Bare `http(s)://` addresses stay text (a viewer may underline them; their target is what is shown).
A child agent's transcript is the same Markdown one heading level down, every line of it quoted (`> `)
under the result of the call that started it: quoting moves whole lines into a container, so what was
inert stays inert.
"""

from __future__ import annotations

import re
from functools import cache

from loopagent.export.transcript import (
    Transcript,
    arguments,
    check_line,
    child_line,
    children_totals,
    diff_of,
    origin,
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


def code(text: str) -> str:
    """A short untrusted string (an id, a tool name) as one inline code span: literal in any viewer."""
    text = printable(str(text)).replace("\n", "\\n").replace("\t", "\\t")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) or not text else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


# What has a meaning inside a line (the line's start is always ours); `<` and `&` become entities.
# An `_` between two letters or digits cannot emphasise (CommonMark), so `check_failed` stays readable.
INLINE = re.compile(r"[\\`*\[\]|~]|_(?![^\W_])|(?<![^\W_])_")


def inline(text: str) -> str:
    """A one-line untrusted fact (a record, a status message, a path) as plain text in any viewer."""
    text = printable(str(text)).replace("\n", " ").replace("&", "&amp;").replace("<", "&lt;")
    return INLINE.sub(lambda m: "\\" + m[0], text)


# A `[` not already escaped by an odd run of backslashes: the start of every link, image and reference.
BRACKET = re.compile(r"(?<!\\)((?:\\\\)*)\[")
LANG = re.compile(r"[\w+#.-]{1,30}")


@cache
def parser():
    """CommonMark (plus tables) with raw HTML and reference definitions off: both then stay text."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").disable("reference")


def inert(line: str) -> str:
    """A line of message text with no `<` (raw HTML, autolinks) and no live `[` (links, images)."""
    return BRACKET.sub(lambda m: m[1] + "\\[", line.replace("<", "&lt;"))


def prose(text: str) -> str:
    """Message text as Markdown (it usually is): its blocks in order, each code block re-fenced by us
    and every other line made inert (see the module's docstring)."""
    text = printable(text)
    lines = text.split("\n")
    blocks = []
    for token in parser().parse(text):
        if token.level != 0 or token.map is None or token.nesting == -1:
            continue
        if token.type in ("fence", "code_block"):
            lang = LANG.match(token.info.strip())
            blocks.append(fenced(token.content, lang[0] if lang else ""))
        else:
            start, end = token.map
            blocks.append("\n".join(inert(line) for line in lines[start:end]))
    return "\n\n".join(blocks).strip()


def markdown(t: Transcript) -> str:
    """The whole transcript as one Markdown document."""
    head = t.header
    out = [f"# Session {inline(t.id)}", ""]
    facts = [("task", t.task.split("\n", 1)[0]), ("model", head.get("model")), ("created", head.get("created")),
             ("workspace", head.get("workspace"))]
    if (came := origin(head)) is not None:
        facts.append(came)
    out += [f"- **{name}**: {inline(value)}" for name, value in facts if value]
    out.append("")
    out += body(t, 0)
    status = inline(t.status) + (f": {inline(t.status_message)}" if t.status_message else "")
    out += ["## Result", "", f"**status**: {status}", ""]
    if t.check is not None:
        out += [f"**{inline(check_line(t.check))}**", ""]
    out += [f"**totals**: {inline(total_line(t.totals))}", ""]
    if (spent := children_totals(t)) is not None:
        out += [f"**child agents**: {inline(total_line(spent))}", ""]
    return "\n".join(out)


def body(t: Transcript, depth: int) -> list[str]:
    """The lines of a transcript's messages and records, each task result followed by its child's."""
    out = []
    for item in t.items:
        out += block(item, depth)
        if isinstance(item, ToolResult) and item.call_id in t.children:
            out += nested(t.children[item.call_id], depth + 1)
    return out


def nested(child: Transcript | str, depth: int) -> list[str]:
    """A child agent's transcript (or why there is none), quoted under the call that started it."""
    if isinstance(child, str):
        return quoted([f"**child agent**: {inline(child)}"])
    lines = [f"**child agent** {code(child.agent)}, session {code(child.id)}", ""]
    lines += body(child, depth)
    lines += [f"**child agent {inline(child.agent)} ended**: {inline(child_line(child))}"]
    return quoted(lines)


def quoted(lines: list[str]) -> list[str]:
    """Lines as one block quote (every line marked, so none continues lazily), then a blank line."""
    return [f"> {line}" if line else ">" for line in "\n".join(lines).split("\n")] + [""]


def block(item: object, depth: int = 0) -> list[str]:
    """The lines of one message or record; a child's (`depth` > 0) headings are that many levels lower."""
    heading = "#" * (2 + depth)
    if isinstance(item, dict):
        out = [f"> {inline(record_line(item))}", ""]
        if item.get("type") == "check" and item.get("output"):
            out += [fenced(shown(str(item["output"]))), ""]
        return out
    if isinstance(item, SystemMessage):
        return ["<details><summary>system prompt</summary>", "", fenced(shown(item.content)), "", "</details>", ""]
    if isinstance(item, UserMessage):
        return [f"{heading} User", "", prose(item.content), ""]
    if isinstance(item, AssistantMessage):
        out = [f"{heading} Assistant", ""]
        if item.thinking:
            out += ["<details><summary>thinking</summary>", "", fenced(printable(item.thinking)), "", "</details>", ""]
        if item.text.strip():
            out += [prose(item.text), ""]
        for call in item.tool_calls:
            out += [f"**call** {code(call.name)} ({code(call.id)})", "", fenced(printable(arguments(call)), "json"), ""]
        return out
    if isinstance(item, ToolResult):
        out = [f"**result** of {code(item.name)}: {inline(outcome(item))}", ""]
        if diff := diff_of(item):
            out += [fenced(diff, "diff"), ""]
        else:
            out += [fenced(shown(item.content)), ""]
        return out
    return []
