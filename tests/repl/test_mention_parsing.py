"""Small rules of the prompt features, in process."""

from __future__ import annotations

from loopagent.compose.mentions import mentioned


def test_an_attachment_quoted_back_is_no_new_mention():
    quoted = "see @a.txt\n\n[attached @b.txt, as read_file shows it]\n     1\tx\nand @c.py please"
    assert mentioned(quoted) == ["a.txt", "c.py"]
