"""read_file, write_file, edit_file called directly on a real workspace on disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopagent.errors import ToolError
from loopagent.tools.base import ToolContext
from loopagent.tools.files import (
    READ_MAX_BYTES,
    EditFile,
    EditParams,
    ReadFile,
    ReadParams,
    WriteFile,
    WriteParams,
)
from loopagent.tools.workspace import Workspace

CODE = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


@pytest.fixture
def c(tmp_path: Path) -> ToolContext:
    (tmp_path / "calc.py").write_text(CODE)
    return ToolContext(Workspace(tmp_path))


def read(c: ToolContext, path: str, **kw) -> str:
    return ReadFile().run(ReadParams(path=path, **kw), c).content


def edit(c: ToolContext, path: str, old: str, new: str, **kw):
    return EditFile().run(EditParams(path=path, old_string=old, new_string=new, **kw), c)


def test_read_numbers_lines_like_cat_n(c):
    out = read(c, "calc.py")
    assert out.splitlines()[:2] == ["     1\tdef add(a, b):", "     2\t    return a + b"]
    assert "more" not in out  # the whole file fitted


def test_read_pages_with_offset_and_limit(c):
    out = read(c, "calc.py", offset=4, limit=1)
    assert out.splitlines()[0] == "     5\tdef sub(a, b):"
    assert "lines 5-5 of 6 in calc.py; 1 more; continue with offset=5" in out
    assert read(c, "calc.py", offset=5).splitlines() == ["     6\t    return a - b"]
    with pytest.raises(ToolError, match="offset 6 is past the end of calc.py, which has 6 lines"):
        read(c, "calc.py", offset=6)


def test_huge_file_pages_by_line_limit_and_by_bytes(c):
    root = c.workspace.root
    (root / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 10_001)))
    first = read(c, "big.txt")
    assert first.splitlines()[-2] == "  2000\tline 2000"
    assert first.splitlines()[-1] == "[lines 1-2000 of 10000 in big.txt; 8000 more; continue with offset=2000]"
    assert read(c, "big.txt", offset=9999).splitlines() == [" 10000\tline 10000"]
    # Long lines: the byte cap ends the page before the line limit does.
    (root / "wide.txt").write_text(("x" * 1000 + "\n") * 500)
    page = read(c, "wide.txt")
    shown = [line for line in page.splitlines() if "\t" in line]
    assert len(page) <= READ_MAX_BYTES + 200 and 10 < len(shown) < 500
    assert page.endswith(f"continue with offset={len(shown)}]")
    # One enormous line is cut with a marker, not returned whole.
    (root / "min.js").write_text("a" * 300_000)
    assert "[... 298000 bytes clipped ...]" in read(c, "min.js")


def test_binary_directory_missing_and_empty(c):
    root = c.workspace.root
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(ToolError, match=r"logo.png is a binary file \(16 bytes\)"):
        read(c, "logo.png")
    (root / "pkg").mkdir()
    with pytest.raises(ToolError, match="pkg is a directory; use list_files"):
        read(c, "pkg")
    with pytest.raises(ToolError, match="calx.py does not exist; did you mean calc.py"):
        read(c, "calx.py")
    (root / "empty.txt").write_text("")
    assert read(c, "empty.txt") == "empty.txt is empty (0 lines)"


def test_read_shows_crlf_files_without_carriage_returns(c):
    (c.workspace.root / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    assert read(c, "win.txt") == "     1\tone\n     2\ttwo"


def test_write_creates_parents_and_reports_a_new_file(c):
    result = WriteFile().run(WriteParams(path="pkg/sub/mod.py", content="x = 1\ny = 2\n"), c)
    assert result.content == "created pkg/sub/mod.py: new file, 2 lines"
    assert "+x = 1" in result.display and "+++ b/pkg/sub/mod.py" in result.display
    assert (c.workspace.root / "pkg/sub/mod.py").read_text() == "x = 1\ny = 2\n"


def test_write_over_an_existing_file_returns_the_diff(c):
    new = CODE.replace("a - b", "a - b - 0")
    result = WriteFile().run(WriteParams(path="calc.py", content=new), c)
    assert result.content.startswith("wrote calc.py: 6 lines (+1 -1 lines)\n--- a/calc.py\n+++ b/calc.py\n")
    assert "-    return a - b\n+    return a - b - 0\n" in result.content
    assert result.display in result.content
    same = WriteFile().run(WriteParams(path="calc.py", content=new), c)
    assert same.content == "calc.py unchanged: it already has this content"


def test_write_to_a_directory_is_an_error(c):
    (c.workspace.root / "pkg").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        WriteFile().run(WriteParams(path="pkg", content="x"), c)


def test_edit_replaces_once_and_returns_the_diff(c):
    read(c, "calc.py")
    result = edit(c, "calc.py", "return a + b", "return b + a")
    assert result.content.startswith("edited calc.py: replaced 1 occurrence at line 2 (+1 -1 lines)\n")
    assert "-    return a + b\n+    return b + a\n" in result.display
    assert (c.workspace.root / "calc.py").read_text() == CODE.replace("a + b", "b + a")
    # The agent's own edit does not make the file stale: a second edit works without a re-read.
    edit(c, "calc.py", "return b + a", "return a + b")
    assert (c.workspace.root / "calc.py").read_text() == CODE


def test_edit_refuses_a_file_not_read(c):
    with pytest.raises(ToolError, match="has not been read in this session; read_file it"):
        edit(c, "calc.py", "a + b", "b + a")
    assert (c.workspace.root / "calc.py").read_text() == CODE


def test_edit_refuses_a_file_another_process_changed_after_the_read(c):
    path = c.workspace.root / "calc.py"
    read(c, "calc.py")
    # Same size, written right after the read: an mtime/size stamp could miss this change.
    changed = CODE.replace("a - b", "b - a")
    subprocess.run([sys.executable, "-c", f"open({str(path)!r}, 'w').write({changed!r})"], check=True, timeout=30)
    with pytest.raises(ToolError, match="changed on disk since it was last read; read_file it again"):
        edit(c, "calc.py", "a + b", "b + a")
    assert path.read_text() == changed
    read(c, "calc.py")
    edit(c, "calc.py", "a + b", "b + a")
    assert path.read_text() == changed.replace("a + b", "b + a")


def test_ambiguous_edit_reports_count_and_lines_and_changes_nothing(c):
    read(c, "calc.py")
    with pytest.raises(ToolError) as err:
        edit(c, "calc.py", "(a, b):", "(a, b, c):")
    assert "matches 2 times in calc.py, at lines 1, 5; the file is unchanged" in str(err.value)
    assert "replace_all" in str(err.value)
    assert (c.workspace.root / "calc.py").read_text() == CODE
    result = edit(c, "calc.py", "(a, b):", "(a, b, c):", replace_all=True)
    assert "replaced 2 occurrences" in result.content
    assert (c.workspace.root / "calc.py").read_text().count("(a, b, c):") == 2


def test_near_miss_edit_points_to_the_line_that_differs_in_indentation(c):
    read(c, "calc.py")
    with pytest.raises(ToolError) as err:
        edit(c, "calc.py", "def sub(a, b):\n  return a - b", "def sub(a, b):\n  return b - a")
    msg = str(err.value)
    assert msg.startswith("old_string was not found in calc.py.")
    assert "Lines 5-6 match it except for whitespace or indentation" in msg
    assert "     6\t    return a - b" in msg  # the real text, to copy
    assert (c.workspace.root / "calc.py").read_text() == CODE


def test_near_miss_similar_text_and_line_number_prefixes(c):
    read(c, "calc.py")
    with pytest.raises(ToolError, match=r"most similar text is at lines 5-6"):
        edit(c, "calc.py", "def sub(x, b):\n    return x - b\n", "pass\n")
    with pytest.raises(ToolError, match="line numbers from read_file"):
        edit(c, "calc.py", "     2\t    return a + b", "     2\t    return 0")
    with pytest.raises(ToolError, match="not found in calc.py. Read the file again"):
        edit(c, "calc.py", "completely unrelated", "x")
    assert (c.workspace.root / "calc.py").read_text() == CODE


def test_edit_in_a_crlf_file_keeps_crlf(c):
    path = c.workspace.root / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    read(c, "win.txt")
    edit(c, "win.txt", "two\nthree", "2\n3")
    assert path.read_bytes() == b"one\r\n2\r\n3\r\n"


def test_edit_keeps_bytes_that_are_not_utf8(c):
    path = c.workspace.root / "latin.txt"
    path.write_bytes(b"caf\xe9\nvalue = 1\n")
    read(c, "latin.txt")
    edit(c, "latin.txt", "value = 1", "value = 2")
    assert path.read_bytes() == b"caf\xe9\nvalue = 2\n"


def test_diff_marks_a_missing_final_newline(c):
    (c.workspace.root / "n.txt").write_text("a\nb")
    read(c, "n.txt")
    result = edit(c, "n.txt", "b", "c")
    assert "-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n" in result.display


def test_edit_rejects_empty_and_identical_strings(c):
    read(c, "calc.py")
    with pytest.raises(ToolError, match="old_string is empty; to create or replace a whole file use write_file"):
        edit(c, "calc.py", "", "x")
    with pytest.raises(ToolError, match="identical"):
        edit(c, "calc.py", "a + b", "a + b")


def test_previews_show_the_diff_to_be_made_and_write_nothing(c):
    path = c.workspace.root / "calc.py"
    read(c, "calc.py")
    preview = EditFile().preview(EditParams(path="calc.py", old_string="a - b", new_string="b - a"), c)
    assert "-    return a - b\n+    return b - a\n" in preview
    preview = WriteFile().preview(WriteParams(path="new/x.py", content="x = 1\n"), c)
    assert "+++ b/new/x.py" in preview and "+x = 1" in preview
    failing = EditFile().preview(EditParams(path="calc.py", old_string="nope", new_string="x"), c)
    assert failing.startswith("(this call will fail: old_string was not found in calc.py.")
    assert path.read_text() == CODE and not (c.workspace.root / "new").exists()


# ---- atomic writes -------------------------------------------------------------------------------

def write(c: ToolContext, path: str, content: str):
    return WriteFile().run(WriteParams(path=path, content=content), c)


def test_write_replaces_the_file_keeping_its_mode_and_leaves_no_temporary_file(c):
    path = c.workspace.root / "run.sh"
    path.write_text("echo old\n")
    path.chmod(0o750)
    inode = path.stat().st_ino
    write(c, "run.sh", "echo new\n")
    assert path.read_text() == "echo new\n"
    assert path.stat().st_mode & 0o7777 == 0o750
    assert path.stat().st_ino != inode  # a new file renamed over the old one, not rewritten in place
    read(c, "run.sh")
    edit(c, "run.sh", "new", "newer")
    assert path.stat().st_mode & 0o7777 == 0o750
    assert sorted(p.name for p in c.workspace.root.iterdir()) == ["calc.py", "run.sh"]


def test_a_new_file_gets_the_umask_mode(c):
    write(c, "deep/new.txt", "x\n")
    umask = os.umask(0)
    os.umask(umask)
    assert (c.workspace.root / "deep/new.txt").stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path):
    """A real write failure: the file size limit (RLIMIT_FSIZE) is hit halfway through the new content."""
    (tmp_path / "data.txt").write_text("old content\n")
    script = (
        "import resource, signal, sys\n"
        "from pathlib import Path\n"
        "from loopagent.tools.base import ToolContext\n"
        "from loopagent.tools.files import WriteFile, WriteParams\n"
        "from loopagent.tools.workspace import Workspace\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "r = WriteFile().run(WriteParams(path='data.txt', content='y' * 100000), ToolContext(Workspace(Path(sys.argv[1]))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert "ToolError: cannot write data.txt: File too large" in proc.stderr
    assert (tmp_path / "data.txt").read_text() == "old content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.txt"]
