"""`loop export`: a live run's session (a read, an edit, a failing shell call, thinking, hostile text)
as Markdown and as one self-contained HTML file, parsed by a real HTML parser."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from tests.conftest import where_shells_run
from tests.fakeserver import text, tools

HOSTILE = "<script>alert('x')</script>"
ANSI = "\x1b[31m"


class Page(HTMLParser):
    """Every tag with its attributes, the text of the page, and the text inside each <summary>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.summaries: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self.open.append(tag)

    def handle_endtag(self, tag):
        if self.open and self.open[-1] == tag:
            self.open.pop()

    def handle_data(self, data):
        self.text.append(data)
        if self.open and self.open[-1] == "summary":
            self.summaries.append(data)


def recorded_run(run_loop, server, ws: Path) -> None:
    server.add(
        tools(("read_file", {"path": "a.txt"})),
        tools(("edit_file", {"path": "a.txt", "old_string": "hello", "new_string": "bye"})),
        tools(("shell", {"command": "seq 1 200; exit 3"})),
        text(f"<think>weigh it {ANSI}red {HOSTILE}</think>\nDone {HOSTILE} {ANSI}here."),
    )
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                    *where_shells_run(), f"change a.txt {HOSTILE}")
    assert proc.returncode == 0, proc.stderr


def test_export_md_and_html_of_a_live_run(run_loop, server, workspace, tmp_path):
    recorded_run(run_loop, server, workspace)

    md = run_loop("export", "last", "-C", str(workspace))
    assert md.returncode == 0, md.stderr
    out = md.stdout
    assert "\x1b" not in out and "\\x1b[31m" in out  # the escape is shown, never sent to a terminal
    # no raw tag in the Markdown's prose (inside a code fence a tag is only text)
    assert "change a.txt &lt;script>alert('x')&lt;/script>" in out and "Done &lt;script>" in out
    assert "## User" in out and "change a.txt" in out
    assert "**call** `read_file`" in out and '"path": "a.txt"' in out  # arguments as JSON
    assert "```diff" in out and "-hello" in out and "+bye" in out  # the edit as a diff
    assert "**result** of `shell`: exit 3" in out
    assert "lines (" in out and "clipped ...]" in out and "\n200\n" in out  # clipped, with its tail
    assert "<details><summary>thinking</summary>" in out and "weigh it" in out
    assert "**status**: completed" in out
    assert "4 model replies, 3 tool calls (1 failed), 400 prompt + 40 completion tokens" in out

    target = tmp_path / "out.html"  # the format follows the suffix
    html = run_loop("export", "last", "-C", str(workspace), "-o", str(target))
    assert html.returncode == 0, html.stderr
    raw = target.read_text(encoding="utf-8")
    assert "\x1b" not in raw and "<script>" not in raw
    page = Page()
    page.feed(raw)
    page.close()
    names = [tag for tag, _ in page.tags]
    assert "script" not in names and "link" not in names and "img" not in names and "iframe" not in names
    for _, attrs in page.tags:
        for value in attrs.values():
            assert "http:" not in (value or "") and "https:" not in (value or "") and "//" not in (value or "")
    shown = "".join(page.text)
    assert HOSTILE in shown and "\\x1b[31m" in shown  # the hostile text is text, shown as written
    assert "thinking" in page.summaries and "details" in names
    assert ("span", {"class": "add"}) in page.tags and ("span", {"class": "del"}) in page.tags
    assert "+bye" in shown and "exit 3" in shown and "completed" in shown and "3 tool calls (1 failed)" in shown


def test_a_bad_session_or_format_is_one_line_and_exit_2(run_loop, workspace, loop_home):
    from loopagent.session import SessionWriter, header
    from loopagent.session.catalog import sessions_dir

    nothing = run_loop("export", "last", "-C", str(workspace))
    assert nothing.returncode == 2 and nothing.stderr.count("\n") == 1 and "no saved sessions" in nothing.stderr
    directory = sessions_dir(loop_home, workspace)
    directory.mkdir(parents=True)
    SessionWriter.create(directory / "s.jsonl", header("s", workspace, "m", "http://127.0.0.1:1/v1", "t")).close()
    missing = run_loop("export", "nosuch", "-C", str(workspace))
    assert missing.returncode == 2 and missing.stderr.startswith("loop: no session 'nosuch'")
    assert missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr
    bad = run_loop("export", "last", "-C", str(workspace), "--format", "pdf")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "md or html" in bad.stderr


def test_check_and_hook_records_are_rendered_and_may_be_absent(tmp_path):
    from loopagent.export import export
    from loopagent.messages import AssistantMessage, SystemMessage, UserMessage, to_record
    from loopagent.session import SessionWriter, header

    path = tmp_path / "s.jsonl"
    writer = SessionWriter.create(path, header("s", tmp_path, "m", "http://127.0.0.1:1/v1", "task"))
    for index, message in enumerate([SystemMessage("sys"), UserMessage("go"), AssistantMessage("done")]):
        writer.write({"type": "message", "index": index, **to_record(message)})
    plain = export(path, "md")
    assert "**status**: unfinished" in plain and "check passed" not in plain and "check failed" not in plain
    writer.write({"type": "check", "command": "pytest -q", "passed": False, "exit_code": 1, "attempt": 2,
                  "output": "1 failed <b>x</b>", "seconds": 0.5, "timed_out": False, "time": "t"})
    writer.write({"type": "hook", "kind": "stop", "command": "notify", "verdict": "ok"})
    writer.write({"type": "end", "status": "check_failed", "steps": 1, "message": "", "time": "t",
                  "usage": {"prompt_tokens": 5, "completion_tokens": 1}, "cost": 0.25})
    writer.close()
    md = export(path, "md")
    assert "check failed: pytest -q (exit 1, attempt 2)" in md and "1 failed &lt;b>x</b>" not in md  # output is fenced
    assert "1 failed <b>x</b>" in md and "hook stop notify: ok" in md
    assert "**status**: check_failed" in md and "$0.2500" in md
    html = export(path, "html")
    assert "check failed: pytest -q (exit 1, attempt 2)" in html and "1 failed &lt;b&gt;x&lt;/b&gt;" in html
    assert json.loads(path.read_text().splitlines()[-1])["status"] == "check_failed"
