"""Untrusted text made safe for a terminal: control and bidi characters become visible escapes.

Model text, tool output, file names and commands reach the user's terminal. A raw ESC can set
the window title, write the clipboard (OSC 52) or erase and redraw the line an approval prompt
shows; `\\r` overwrites a line; C1 controls (U+0080-U+009F) act as ESC on some terminals; bidi
overrides and isolates reorder what is displayed. Each becomes a visible escape (`\\x1b`,
`\\r`, `\\u202e`); newlines and tabs stay.
"""

from __future__ import annotations

import re

BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + "".join(chr(c) for c in BIDI) + "]")


def escape_of(code: int) -> str:
    """The visible stand-in for one unsafe character."""
    if code == 0x0D:
        return "\\r"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


TABLE = {code: escape_of(code) for code in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0), *BIDI]}


def printable(text: str) -> str:
    """`text` with every terminal control and bidi character (not `\\n`, `\\t`) as a visible escape."""
    if UNSAFE.search(text) is None:  # the common case: nothing to copy
        return text
    return text.translate(TABLE)
