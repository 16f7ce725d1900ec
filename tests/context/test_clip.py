"""The one clip function: head, tail, one marker, counts that add up, unicode, tiny limits."""

from __future__ import annotations

import pytest

from loopagent.clip import Gap, clip, marker, size_of

TEXT = "".join(f"line {i}\n" for i in range(100))


def test_text_that_fits_is_returned_unchanged():
    assert clip("short", 5) == "short"
    assert clip(TEXT, len(TEXT) // 2, len(TEXT) - len(TEXT) // 2) == TEXT
    assert clip("", 0, 0) == ""


def test_head_and_tail_at_line_boundaries_with_the_marker_on_its_own_line():
    out = clip(TEXT, 30, 30)
    assert out == ("line 0\nline 1\nline 2\nline 3\n[... 93 lines (738 bytes) clipped ...]\n"
                   "line 97\nline 98\nline 99\n")
    head, _, tail = out.partition("[...")
    hidden = TEXT[len(head): len(TEXT) - len(tail.partition("\n")[2])]
    assert hidden.count("\n") == 93 and size_of(hidden) == 738


def test_the_counts_add_up_for_any_sizes():
    for head in range(0, 120, 7):
        for tail in range(0, 120, 11):
            out = clip(TEXT, head, tail)
            if out == TEXT:
                continue
            before, mark, after = out.partition("[... ")
            count = mark + after.partition(" ...]")[0]
            kept_tail = after.partition(" ...]\n")[2]
            assert TEXT.startswith(before) and TEXT.endswith(kept_tail)
            hidden = TEXT[len(before): len(TEXT) - len(kept_tail)]
            assert count == marker(hidden.count("\n"), size_of(hidden)).removesuffix(" ...]"), (head, tail)


def test_lines_mode_keeps_whole_first_and_last_lines():
    assert clip(TEXT, 2, 1, lines=True) == "line 0\nline 1\n[... 97 lines (768 bytes) clipped ...]\nline 99\n"
    assert clip(TEXT, 400, lines=True) == TEXT
    assert clip("a\nb\nc", 1, 1, lines=True) == "a\n[... 1 line (2 bytes) clipped ...]\nc"


def test_a_single_line_keeps_the_marker_inline_and_counts_bytes_not_characters():
    assert clip("a" * 50, 10) == "a" * 10 + " [... 40 bytes clipped ...]"
    assert clip("é" * 50, 10, 5) == "é" * 10 + " [... 70 bytes clipped ...] " + "é" * 5  # 35 x 2 bytes
    emoji = "🙂" * 20
    out = clip(emoji, 3, 2)
    assert out == "🙂" * 3 + " [... 60 bytes clipped ...] " + "🙂" * 2  # never half a character


def test_a_gap_counts_what_the_caller_already_left_out():
    # A stream's middle that was never kept lies between the head and the tail given.
    assert clip("head\ntail\n", 5, 5, gap=Gap(7, 1000)) == "head\n[... 7 lines (1000 bytes) clipped ...]\ntail\n"
    # The unread rest of a line: tail 0, the gap is at the end.
    assert clip("x" * 10, 10, gap=Gap(0, 5)) == "x" * 10 + " [... 5 bytes clipped ...]"
    assert clip("x" * 12, 10, gap=Gap(0, 5)) == "x" * 10 + " [... 7 bytes clipped ...]"


@pytest.mark.parametrize(("head", "tail"), [(0, 0), (0, 1), (1, 0), (-5, -5)])
def test_tiny_limits_still_say_what_was_clipped(head, tail):
    out = clip("abc\ndef\n", head, tail)
    assert "clipped ...]" in out and len(out) < 60
    assert clip("abcdef", 0) == " [... 6 bytes clipped ...]"


def test_a_note_says_why_inside_the_one_marker():
    out = clip(TEXT, 10, 10, note="to save context; run the tool again to see them")
    assert "lines (" in out and "bytes) clipped to save context; run the tool again to see them ...]" in out
    assert marker(1, 3) == "[... 1 line (3 bytes) clipped ...]" and marker(0, 3) == "[... 3 bytes clipped ...]"


def test_a_lone_surrogate_is_counted_not_fatal():
    assert clip("\udcff" * 10, 2) == "\udcff" * 2 + " [... 24 bytes clipped ...]"


def test_the_shell_clips_its_buffer_with_the_same_marker_and_never_half_a_character(tmp_path):
    from loopagent.tools.base import ToolContext
    from loopagent.tools.shell import HEAD_BYTES, TAIL_BYTES, Shell, ShellParams
    from loopagent.tools.workspace import Workspace

    # One line of 2-byte characters after one odd byte: both cuts would fall inside a character.
    count = HEAD_BYTES + TAIL_BYTES
    command = f"python3 -c \"import sys; sys.stdout.write('x' + 'é' * {count})\""
    result = Shell().run(ShellParams(command=command), ToolContext(Workspace(tmp_path)))
    body = result.content.removeprefix("exit code 0\n")
    head, _, rest = body.partition(" [... ")
    counted, _, tail = rest.partition(" clipped ...] ")
    assert "\ufffd" not in body and head.startswith("xé") and set(tail) == {"é"}
    assert counted == f"{1 + 2 * count - size_of(head) - size_of(tail)} bytes"
    assert result.details is not None and result.details.clipped and result.details.lines == 1
