"""Git's config format, read the way git reads it, to find the entries that make git run a program.

The tripwire (tripwire.py) asks one question of a config file a command wrote: did it gain an
entry that runs a program (`core.fsmonitor`, `gpg.program`, `alias.*`, ...)? Spawning
`git config --list` per file costs a process per repository per call, so the format is parsed
here, following git's own parser (config.c): case-insensitive section and key names, `[section
"sub"]` and the old `[section.sub]`, a key on the header's line, quotes, escapes, `#`/`;`
comments, backslash-newline continuations, CRLF, a BOM. Whatever git itself would refuse or that
this parser cannot read as git would is `DOUBT`: the caller treats the whole file as dangerous.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

MAX_BYTES = 1 << 20  # a config larger than this is not read: treated as dangerous

# Sections whose every entry names or shapes a program git runs (aliases with `!`, pagers per
# command, clean/smudge filters, signing and credential programs, diff/merge tools, includes that
# pull in another file, trailer commands, archive filters, transports such as `ext::`).
RUNNING_SECTIONS = frozenset({
    "alias", "pager", "filter", "gpg", "credential", "difftool", "mergetool", "include", "includeif",
    "guitool", "browser", "man", "trailer", "sendemail", "tar", "protocol", "uploadpack",
})
# (section, key) pairs, any subsection: `diff.<driver>.textconv`, `remote.<name>.uploadpack`, ...
RUNNING_KEYS = frozenset({
    ("core", "fsmonitor"), ("core", "hookspath"), ("core", "sshcommand"), ("core", "pager"),
    ("core", "editor"), ("core", "askpass"), ("core", "gitproxy"), ("core", "alternaterefscommand"),
    ("diff", "external"), ("diff", "textconv"), ("diff", "command"), ("merge", "driver"),
    ("sequence", "editor"), ("log", "showsignature"), ("remote", "uploadpack"), ("remote", "receivepack"),
    ("web", "browser"), ("interactive", "difffilter"), ("ssh", "variant"),
})
SPACE = " \t\n\v\f\r"


class Doubt(ValueError):
    """The file is not config as git reads it (git would refuse it, or it is too large to read)."""


@dataclass(frozen=True)
class Entry:
    section: str  # lower case
    subsection: str | None  # as written (case matters to git); None without one
    key: str  # lower case
    value: str | None  # None: a key without `=` (git reads it as true)
    start: int  # offsets in the file's bytes: the key's first byte ...
    end: int  # ... and the end of its value (the newline after it excluded)

    def runs_program(self) -> bool:
        if self.section in RUNNING_SECTIONS or (self.section, self.key) in RUNNING_KEYS:
            return True
        # `submodule.<name>.update = !command` runs the command on `git submodule update`
        return self.section == "submodule" and self.key == "update" and (self.value or "").lstrip().startswith("!")

    def shown(self) -> str:
        middle = f".{self.subsection}" if self.subsection is not None else ""
        return f"{self.section}{middle}.{self.key}"


def parse(data: bytes) -> list[Entry]:
    """Every entry of a config file in order; Doubt where git would fail or the bytes are unusual."""
    if len(data) > MAX_BYTES or b"\0" in data:
        raise Doubt("too large or binary")
    return Reader(data.decode("latin-1")).entries()  # latin-1: one character per byte, offsets agree


@lru_cache(maxsize=512)
def running(data: bytes) -> frozenset[tuple[str, str | None, str, str | None]] | None:
    """The entries of `data` that run a program, as comparable values; None when in doubt. Cached:
    the same bytes are asked about on every call while a config stays as it is."""
    try:
        return frozenset((e.section, e.subsection, e.key, e.value) for e in parse(data) if e.runs_program())
    except Doubt:
        return None


@lru_cache(maxsize=512)
def includes(data: bytes) -> tuple[str, ...]:
    """The paths `include.path` and `includeIf.*.path` name (unresolved); () when in doubt."""
    try:
        return tuple(e.value for e in parse(data)
                     if e.section in ("include", "includeif") and e.key == "path" and e.value)
    except Doubt:
        return ()


def without_running(data: bytes) -> tuple[bytes, list[str]]:
    """`data` with every entry that runs a program cut out (section headers and the rest kept),
    and the names of what was cut. Doubt when the file cannot be read as git reads it."""
    text = data.decode("latin-1")
    cut = [e for e in parse(data) if e.runs_program()]
    out, at = [], 0
    for e in cut:
        line_start = text.rfind("\n", 0, e.start) + 1
        start, end = e.start, e.end
        if not text[line_start:start].strip(SPACE):  # the entry had its line(s) to itself: drop them whole
            start = line_start
            end += next((len(nl) for nl in ("\r\n", "\n") if text.startswith(nl, end)), 0)
        out.append(text[at:start])
        at = end
    out.append(text[at:])
    return "".join(out).encode("latin-1"), sorted({e.shown() for e in cut})


class Reader:
    """git's config.c parser, character by character (`next` turns CRLF into LF and EOF into LF)."""

    def __init__(self, text: str):
        self.text = text[3:] if text.startswith("\xef\xbb\xbf") else text
        self.offset = len(text) - len(self.text)
        self.at = 0
        self.mark = 0  # where the character `next` returned last began
        self.eof = False

    def next(self) -> str:
        self.mark = self.at
        if self.at >= len(self.text):
            self.eof = True
            return "\n"
        c = self.text[self.at]
        self.at += 1
        if c == "\r" and self.text.startswith("\n", self.at):
            self.at += 1
            return "\n"
        return c

    def entries(self) -> list[Entry]:
        found: list[Entry] = []
        section: str | None = None
        comment = False
        while True:
            c = self.next()
            if self.eof:
                return found
            if c == "\n":
                comment = False
                continue
            if comment or c in SPACE:
                continue
            if c in "#;":
                comment = True
                continue
            if c == "[":
                section = self.header()
                continue
            if not c.isascii() or not c.isalpha() or section is None:
                raise Doubt("a line git cannot read")
            found.append(self.entry(section, c))

    def header(self) -> str:
        name = []
        while True:
            c = self.next()
            if self.eof or c == "\n":
                raise Doubt("unterminated section header")
            if c == "]":
                if not name:
                    raise Doubt("empty section name")
                return "".join(name)
            if c in SPACE:
                return "".join(name) + "\0" + self.subsection()
            if not (c.isascii() and (c.isalnum() or c in "-.")):
                raise Doubt("bad section name")
            name.append(c.lower())

    def subsection(self) -> str:
        c = self.next()
        while c in SPACE and c != "\n":
            c = self.next()
        if c != '"':
            raise Doubt("bad subsection")
        sub = []
        while True:
            c = self.next()
            if c == "\n":
                raise Doubt("unterminated subsection")
            if c == '"':
                break
            if c == "\\":
                c = self.next()
                if c == "\n":
                    raise Doubt("unterminated subsection")
            sub.append(c)
        if self.next() != "]":
            raise Doubt("bad subsection")
        return "".join(sub)

    def entry(self, section: str, first: str) -> Entry:
        start = self.mark
        key = [first.lower()]
        c = self.next()
        while not self.eof and c.isascii() and (c.isalnum() or c == "-"):
            key.append(c.lower())
            c = self.next()
        while c in " \t":
            c = self.next()
        value = None
        if c != "\n":
            if c != "=":
                raise Doubt("a key without `=`")
            value = self.value()
        end = self.mark  # the newline (or CRLF, or the end of the file) that ended the entry
        if "\0" in section:
            name, sub = section.split("\0", 1)
        else:  # `[section.sub]`: the old form, its subsection lower-cased as git does
            name, _, rest = section.partition(".")
            sub = rest if _ else None
        return Entry(name, sub, "".join(key), value, start + self.offset, end + self.offset)

    def value(self) -> str:
        out: list[str] = []
        quote = comment = False
        spaces = 0
        while True:
            c = self.next()
            if c == "\n":
                if quote:
                    raise Doubt("unterminated quote")
                return "".join(out)
            if comment:
                continue
            if c in SPACE and not quote:
                spaces += 1 if out else 0
                continue
            if not quote and c in "#;":
                comment = True
                continue
            if spaces:
                out.append(" " * spaces)
                spaces = 0
            if c == "\\":
                c = self.next()
                if c == "\n":
                    if self.eof:
                        raise Doubt("a backslash at the end")
                    continue
                escaped = {"t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}.get(c)
                if escaped is None:
                    raise Doubt("bad escape")
                out.append(escaped)
            elif c == '"':
                quote = not quote
            else:
                out.append(c)
