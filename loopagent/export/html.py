"""A transcript as one self-contained HTML file: inline style, no script, no network resource.

Every piece of session text (the model's, the tools', the user's) passes through `esc`, which
escapes HTML and makes control characters visible, so a message holding `<script>` or an ANSI
escape is shown as text. The assistant's Markdown is rendered by markdown-it-py with raw HTML off
(a tag in it is text), no images, and links only to http, https and mailto addresses (a
`javascript:` link stays text); the page's Content-Security-Policy forbids script and any fetch
besides. Thinking, the system prompt and long results fold in <details>; a check run mid-session is
an event in the timeline, and the Result shows only the check the run ended on. A child agent's
transcript is a section of its own inside the result of the call that started it, its headings one
level down, built by the same code (so escaped alike).
"""

from __future__ import annotations

import html
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

STYLE = """
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem}section{border-left:4px solid #ccc;margin:1rem 0;padding:.2rem 1rem}
section.user{border-color:#3b82f6}section.assistant{border-color:#10b981}section.tool{border-color:#a3a3a3}
section.error{border-color:#ef4444}section.child{border-color:#8b5cf6;background:#faf9ff}.record{color:#555;font-style:italic}
pre{background:#f6f6f6;padding:.6rem;overflow-x:auto;white-space:pre-wrap;word-break:break-word}
.add{color:#166534;background:#dcfce7;display:block}.del{color:#991b1b;background:#fee2e2;display:block}
.hunk{color:#6b21a8;display:block}.label{font-weight:600}summary{cursor:pointer;color:#555}
.md table{border-collapse:collapse}.md th,.md td{border:1px solid #ccc;padding:.2rem .5rem}
.md code{background:#f6f6f6;padding:0 .2rem}.md pre code{padding:0}
""".strip()
LINK_SCHEMES = ("http:", "https:", "mailto:")


def esc(text: object) -> str:
    """Untrusted text for HTML: controls made visible, then escaped (quotes too)."""
    return html.escape(printable(str(text)), quote=True)


@cache
def renderer():
    """CommonMark with tables and strikethrough; raw HTML and images off, links to LINK_SCHEMES only."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"]).disable("image")
    md.validateLink = lambda url: url.strip().lower().startswith(LINK_SCHEMES)

    def link_open(self, tokens, idx, options, env):  # a shared page must not hand the reader's session on
        tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
        return self.renderToken(tokens, idx, options, env)

    md.add_render_rule("link_open", link_open)
    return md


def rendered(text: str) -> str:
    """The model's Markdown as HTML (controls made visible first)."""
    return f'<div class="md">{renderer().render(printable(text))}</div>'


def pre(text: str) -> str:
    return f"<pre>{esc(text)}</pre>"


def diff_html(diff: str) -> str:
    """A unified diff with its added, removed and hunk lines marked."""
    rows = []
    for line in diff.splitlines():
        kind = "add" if line.startswith("+") and not line.startswith("+++") else \
            "del" if line.startswith("-") and not line.startswith("---") else "hunk" if line.startswith("@@") else ""
        rows.append(f'<span class="{kind}">{esc(line)}</span>' if kind else esc(line) + "\n")
    return f'<pre class="diff">{"".join(rows)}</pre>'


def page(t: Transcript) -> str:
    """The whole transcript as one HTML document."""
    head = t.header
    facts = [("task", t.task.split("\n", 1)[0]), ("model", head.get("model")), ("created", head.get("created")),
             ("workspace", head.get("workspace"))]
    if (came := origin(head)) is not None:
        facts.append(came)
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           # no network, no script: the page shows what it holds and nothing runs
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
           f"<title>loop session {esc(t.id)}</title><style>{STYLE}</style></head><body>",
           f"<h1>Session {esc(t.id)}</h1><ul>"]
    out += [f'<li><span class="label">{name}</span>: {esc(value)}</li>' for name, value in facts if value]
    out.append("</ul>")
    out += body(t, 0)
    out.append(f'<h2>Result</h2><p><span class="label">status</span>: {esc(t.status)}'
               + (f": {esc(t.status_message)}" if t.status_message else "") + "</p>")
    if t.check is not None:
        out.append(f'<p class="label">{esc(check_line(t.check))}</p>')
    out.append(f'<p><span class="label">totals</span>: {esc(total_line(t.totals))}</p>')
    if (spent := children_totals(t)) is not None:
        out.append(f'<p><span class="label">child agents</span>: {esc(total_line(spent))}</p>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def body(t: Transcript, depth: int) -> list[str]:
    """The HTML of a transcript's messages and records, each task result holding its child's."""
    return [block(item, depth, t.children.get(item.call_id) if isinstance(item, ToolResult) else None)
            for item in t.items]


def nested(child: Transcript | str, depth: int) -> str:
    """A child agent's transcript (or why there is none) as a section inside the result of its call."""
    if isinstance(child, str):
        return f'<p class="record">child agent: {esc(child)}</p>'
    return (f'<section class="child"><p><span class="label">child agent</span> <code>{esc(child.agent)}</code>, '
            f"session <code>{esc(child.id)}</code></p>{''.join(body(child, depth))}"
            f'<p><span class="label">child agent {esc(child.agent)} ended</span>: {esc(child_line(child))}</p>'
            "</section>")


def block(item: object, depth: int = 0, child: Transcript | str | None = None) -> str:
    """The HTML of one message or record; a child's (`depth` > 0) headings are that many levels lower,
    and `child` is what a task result started."""
    h = f"h{min(3 + depth, 6)}"
    if isinstance(item, dict):
        line = f'<p class="record">{esc(record_line(item))}</p>'
        if item.get("type") == "check" and item.get("output"):
            return line + f"<details><summary>check output</summary>{pre(shown(str(item['output'])))}</details>"
        return line
    if isinstance(item, SystemMessage):
        return f"<details><summary>system prompt</summary>{pre(shown(item.content))}</details>"
    if isinstance(item, UserMessage):
        return f'<section class="user"><{h}>User</{h}>{pre(item.content)}</section>'
    if isinstance(item, AssistantMessage):
        parts = [f'<section class="assistant"><{h}>Assistant</{h}>']
        if item.thinking:
            parts.append(f"<details><summary>thinking</summary>{pre(item.thinking)}</details>")
        if item.text.strip():
            parts.append(rendered(item.text))
        for call in item.tool_calls:
            parts.append(f'<p><span class="label">call</span> <code>{esc(call.name)}</code> ({esc(call.id)})</p>'
                         + pre(arguments(call)))
        return "".join(parts) + "</section>"
    if isinstance(item, ToolResult):
        kind = "tool error" if item.is_error else "tool"
        diff = diff_of(item)
        shown_body = diff_html(diff) if diff else pre(shown(item.content))
        inner = nested(child, depth + 1) if child is not None else ""
        return (f'<section class="{kind}"><p><span class="label">result</span> of <code>{esc(item.name)}</code>: '
                f"{esc(outcome(item))}</p>{shown_body}{inner}</section>")
    return ""
