"""What the shell parser cannot read, in one place. Each such command is "unreadable" and asks.

bashlex parses most of bash; for the forms below it raises, or it returns nodes that do not
show what bash would run. The policy never guesses about them: the command needs approval
(and is denied when its text names a denied program anywhere).
"""

from __future__ import annotations

import re


class Unparseable(Exception):
    """The command line could not be read exactly; the message says why."""


# (pattern on the source text, why the parser cannot be trusted with it)
KNOWN_FORMS: tuple[tuple[re.Pattern, str], ...] = tuple((re.compile(p), why) for p, why in (
    (r"\[\[", "bashlex cannot parse [[ ... ]] tests"),
    (r"(^|[\s;&|(])case\s", "bashlex cannot parse case statements"),
    (r"\$\(\(|(^|[\s;&|])\(\(", "bashlex cannot parse arithmetic $(( )) and (( ))"),
    (r"(^|[\s;&|(])time\s", "bashlex cannot parse the time keyword"),
    (r"(^|[\s;&|(])coproc\s", "bashlex cannot parse coproc"),
    (r"(^|[\s;&|(])select\s", "bashlex cannot parse select loops"),
    (r"\$\{[^}]*(\$\(|`)", "bashlex leaves a substitution inside ${...} unparsed"),
    (r"~[^\s/]*(\$\(|`)", "bashlex leaves a substitution inside a ~word unparsed"),
    (r"\\`", "nested backtick substitutions are not checked"),
))
# Nesting of `bash -c "bash -c ..."` deeper than this is not something a coding task needs.
MAX_DEPTH = 12


def why_unparseable(text: str, fallback: str) -> str:
    """The reason to show: a known unreadable form if the text has one, else `fallback`."""
    for pattern, why in KNOWN_FORMS:
        if pattern.search(text):
            return why
    return fallback
