"""A bash command line as the simple commands it would run. Pure; used by the permission policy.

bashlex does the parsing. On top of it this module unwraps what only carries
another command (`env VAR=x`, `command`, `nohup`, `timeout N`, `xargs`, `nice`,
`find -exec`), and parses again what bash would parse again (`bash -c '...'`,
`sh -c`, `eval`, `alias`, `env -S`). Whatever it cannot resolve statically is
reported (`Unparseable`, or `Command.opaque`) so the policy can fail closed.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, replace

# Deeper nesting of `bash -c "bash -c ..."` than this is not something a coding task needs.
MAX_DEPTH = 12
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish"})
EXPANSIONS = frozenset({"parameter", "commandsubstitution", "processsubstitution"})
# Options of the unwrapped commands that take a separate value (`timeout -s KILL 5 cmd`).
VALUE_OPTIONS = {
    "env": {"-u", "--unset", "-C", "--chdir"},
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "--class", "-n", "--classdata", "-p", "-P", "-u"},
    "stdbuf": {"-i", "-o", "-e"},
    "xargs": {"-I", "-n", "-P", "-d", "-L", "-s", "-a", "-E", "-e", "--max-args", "--max-procs",
              "--delimiter", "--max-lines", "--arg-file", "--replace"},
    "exec": {"-a"},
    "command": set(),
    "nohup": set(),
    "builtin": set(),
    "setsid": set(),
    "busybox": set(),
    "watch": {"-n", "--interval"},
}
VARIABLE = re.compile(r"\$[A-Za-z_{0-9@*#?$!-]")
OUTPUT_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
QUOTED_HEREDOC = re.compile(r"<<(-?)([ \t]*)(['\"])(\w+)\3")


class Unparseable(Exception):
    """The command line could not be parsed; the message says what failed."""


@dataclass(frozen=True)
class Command:
    """One simple command as bash would run it, quoting resolved."""

    words: tuple[str, ...]  # program first; wrappers (`env`, `timeout 5`, ...) and VAR=x removed
    full: tuple[str, ...] = ()  # as written, with assignments and wrappers
    writes: tuple[str, ...] = ()  # output redirection targets (>, >>, &>, >|) and `tee` files
    fed_by: tuple[str, ...] = ()  # programs whose output this command can read (earlier pipe stages, $(...))
    functions: tuple[str, ...] = ()  # shell functions whose body this command is in
    opaque: bool = False  # something it runs is only known at run time ($prog, unquoted-heredoc $(...))
    carrier: bool = False  # only hands a string to bash to parse (`bash -c`, `eval`): judged by its parts

    @property
    def program(self) -> str:
        return posixpath.basename(self.words[0]) if self.words else ""

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def full_text(self) -> str:
        return " ".join(self.full or self.words)


@dataclass(frozen=True)
class Word:
    text: str
    dynamic: bool = False  # contains $var, $(...), `...` or <(...)


def parse(line: str, depth: int = 0) -> list[Command]:
    """All simple commands of `line`, in order, nested ones included. Raises Unparseable."""
    if depth > MAX_DEPTH:
        raise Unparseable(f"more than {MAX_DEPTH} nested levels of bash -c / eval")
    if not line.strip():
        return []
    import bashlex  # ~0.25 s to import: paid at the first shell decision, not at every start

    text, literal_heredocs = unquote_heredoc_delimiters(line)
    try:
        trees = bashlex.parse(text)
    except Exception as exc:  # bashlex raises many types (ParsingError, NotImplementedError, ...)
        raise Unparseable(f"bash syntax the checker does not understand: {exc}") from None
    walker = Walker(text, depth, literal_heredocs)
    try:
        for tree in trees:
            walker.visit(tree, (), ())
    except RecursionError:
        raise Unparseable("nested too deeply to check") from None
    return walker.commands


def unquote_heredoc_delimiters(line: str) -> tuple[str, set[int]]:
    """Rewrite `<<'EOF'` as `<<EOF`, which bashlex can parse; return where it did so.

    Only word characters sit between the removed quotes, so the quoting of every
    other character is unchanged. The bodies of those here-documents stay literal.
    """
    spots: set[int] = set()
    out, last = [], 0
    for m in QUOTED_HEREDOC.finditer(line):
        out.append(line[last:m.start()])
        spots.add(sum(map(len, out)))
        out.append(f"<<{m.group(1)}{m.group(2)}{m.group(4)}")
        last = m.end()
    out.append(line[last:])
    return "".join(out), spots


class Walker:
    """Collects Commands from bashlex trees; one per parse() call."""

    def __init__(self, text: str, depth: int, literal_heredocs: set[int]):
        self.text, self.depth, self.literal_heredocs = text, depth, literal_heredocs
        self.commands: list[Command] = []

    def visit(self, node, fed_by: tuple[str, ...], functions: tuple[str, ...]) -> None:
        kind = node.kind
        if kind == "command":
            self.simple(node, fed_by, functions)
        elif kind == "pipeline":
            upstream: list[str] = []
            for stage in node.parts:
                if stage.kind == "pipe":
                    continue
                start = len(self.commands)
                self.visit(stage, fed_by + tuple(upstream), functions)
                upstream += [c.program for c in self.commands[start:]]
        elif kind == "function":
            name = node.parts[0].word
            for child in node.parts[1:]:
                self.visit(child, fed_by, functions + (name,))
        elif kind in ("commandsubstitution", "processsubstitution"):
            self.visit(node.command, fed_by, functions)
        elif kind == "redirect":
            self.visit_word_parts(node.output, fed_by, functions)
        elif kind in ("list", "compound", "if", "for", "while", "until", "word", "assignment"):
            start = len(self.commands)
            for child in getattr(node, "parts", None) or getattr(node, "list", None) or []:
                self.visit(child, fed_by, functions)
            self.redirect_group(start, getattr(node, "redirects", None) or [], fed_by, functions)
        elif kind not in ("reservedword", "operator", "pipe", "parameter", "tilde", "heredoc"):
            raise Unparseable(f"unsupported shell construct: {kind}")

    def redirect_group(self, start: int, redirects: list, fed_by, functions) -> None:
        """`{ ...; } > file`: every command of the group writes to the file."""
        writes = tuple(self.output_target(r) for r in redirects if self.output_target(r) is not None)
        for r in redirects:
            self.visit_word_parts(r.output, fed_by, functions)
        if writes:
            self.commands[start:] = [replace(c, writes=c.writes + writes) for c in self.commands[start:]]

    def output_target(self, redirect) -> str | None:
        if redirect.type in OUTPUT_REDIRECTS and not isinstance(redirect.output, int):
            return self.word(redirect.output).text
        return None

    def visit_word_parts(self, node, fed_by, functions) -> list[str]:
        """Visit the substitutions inside a word; return the programs they run."""
        if node is None or isinstance(node, int):
            return []
        start = len(self.commands)
        for child in getattr(node, "parts", None) or []:
            self.visit(child, fed_by, functions)
        return [c.program for c in self.commands[start:]]

    def word(self, node) -> Word:
        raw = self.text[node.pos[0]:node.pos[1]]
        parts = {p.kind for p in getattr(node, "parts", None) or []}
        # bashlex mangles $'...' and $"..." quoting; resolve those words from the source text.
        if parts & {"commandsubstitution", "processsubstitution"} or "`" in raw or "$(" in raw:
            return Word(node.word, True)
        # bashlex gets `'a'\''b'` and `$'\x72m'` wrong: resolve quoting from the source text.
        plain = re.sub(r"\$'(?:[^'\\]|\\.)*'?", "", raw)  # $'...' expands nothing
        return Word(dequote(raw), bool(parts & EXPANSIONS) and bool(VARIABLE.search(plain)))

    def simple(self, node, fed_by: tuple[str, ...], functions: tuple[str, ...]) -> None:
        words: list[Word] = []
        assigns: list[str] = []
        writes: list[str] = []
        inner: list[str] = []
        opaque = False
        for part in node.parts:
            if part.kind in ("word", "assignment"):
                inner += self.visit_word_parts(part, fed_by, functions)
                opaque |= hides_substitution(part)
                w = self.word(part)
                if part.kind == "assignment" and not words:
                    assigns.append(w.text)
                else:
                    words.append(w)
            elif part.kind == "redirect":
                inner += self.visit_word_parts(part.output, fed_by, functions)
                target = self.output_target(part)
                if target is not None:
                    writes.append(target)
                heredoc = getattr(part, "heredoc", None)
                if heredoc is not None and part.pos[0] not in self.literal_heredocs:
                    opaque |= "$(" in heredoc.value or "`" in heredoc.value
        feeds = fed_by + tuple(inner)
        if not words:
            if assigns or writes:  # `X=1`, or a bare `> file`
                self.add(Command(tuple(assigns), tuple(assigns), tuple(writes), feeds, functions, opaque))
            return
        self.emit(words, assigns, writes, feeds, functions, opaque)

    def emit(self, words: list[Word], assigns: list[str], writes: list[str], feeds: tuple[str, ...],
             functions: tuple[str, ...], opaque: bool) -> None:
        full = tuple(assigns) + tuple(w.text for w in words)
        words, reparse, extra = unwrap(words) if words else ([], [], [])
        # a script built at run time (`bash -c "$(...)"`, `eval "$x"`) is never fully known
        opaque |= bool(reparse) and any(w.dynamic for w in words[1:])
        words = words or [Word(t) for t in full]  # `exec >file`, a bare `nohup`: judge what was written
        program = words[0]
        opaque |= program.dynamic or any(ch in program.text for ch in "*?[")
        texts = tuple(w.text for w in words)
        if posixpath.basename(texts[0]) == "tee":
            writes = writes + [t for t in texts[1:] if not t.startswith("-")]
        self.add(Command(texts, full, tuple(writes), feeds, functions, opaque, carrier=bool(reparse)))
        for line in reparse:
            for cmd in parse(line, self.depth + 1):
                self.add(Command(cmd.words, cmd.full, cmd.writes, feeds + cmd.fed_by,
                                 functions + cmd.functions, cmd.opaque, cmd.carrier))
        for sub in extra:
            self.emit(sub, [], [], feeds, functions, opaque)

    def add(self, command: Command) -> None:
        self.commands.append(command)


def hides_substitution(node) -> bool:
    """`${x:-$(cmd)}`: bashlex leaves a substitution inside a parameter expansion unparsed."""
    return any(p.kind == "parameter" and ("$(" in str(p.value) or "`" in str(p.value))
               for p in getattr(node, "parts", None) or [])


def unwrap(words: list[Word]) -> tuple[list[Word], list[str], list[list[Word]]]:
    """Strip wrapper programs; return the real command, strings bash parses again, and -exec commands."""
    reparse: list[str] = []
    while words:
        name = posixpath.basename(words[0].text)
        if name in SHELLS:
            script = shell_script(words)
            if script is not None:
                reparse.append(script)
            return words, reparse, []
        if name == "eval":
            reparse.append(" ".join(w.text for w in words[1:]))
            return words, reparse, []
        if name == "alias":
            reparse += [w.text.partition("=")[2] for w in words[1:] if "=" in w.text]
            return words, reparse, []
        if name == "watch":  # runs its arguments with sh -c
            reparse.append(" ".join(w.text for w in skip_options(name, words[1:])))
            return words, reparse, []
        if name == "find":
            return words, reparse, exec_commands(words)
        if name == "command" and len(words) > 1 and words[1].text in ("-v", "-V"):
            return words, reparse, []  # a lookup, not a run
        if name == "env":
            split = env_split_string(words)
            if split is not None:
                reparse.append(split)
                return words, reparse, []
        if name not in VALUE_OPTIONS:
            return words, reparse, []
        words = skip_options(name, words[1:])
        if name == "xargs" and not words:
            words = [Word("echo")]  # what xargs runs by default
    return words, reparse, []


def skip_options(name: str, rest: list[Word]) -> list[Word]:
    """The words after a wrapper's own options (and env's VAR=x, timeout's duration)."""
    takes_value = VALUE_OPTIONS[name]
    i = 0
    while i < len(rest):
        t = rest[i].text
        if t == "--":
            i += 1
            break
        if t in takes_value:
            i += 2
        elif t.startswith("-") and len(t) > 1:
            i += 1
        elif name == "env" and "=" in t and not t.startswith("="):
            i += 1
        else:
            break
    rest = rest[i:]
    if name == "timeout" and rest:
        rest = rest[1:]  # the duration
    return rest


def shell_script(words: list[Word]) -> str | None:
    """The string a shell runs with -c, or None when it runs a file or stdin."""
    has_c = False
    i = 1
    while i < len(words):
        t = words[i].text
        if t in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if t == "--":
            i += 1
            break
        if t.startswith(("-", "+")) and len(t) > 1 and not t.startswith("--"):
            has_c |= "c" in t
        elif not t.startswith("--"):
            break
        i += 1
    if has_c and i < len(words):
        return words[i].text
    return None


def env_split_string(words: list[Word]) -> str | None:
    """`env -S 'cmd args'` splits a string into a command line; return that string."""
    for i, w in enumerate(words[1:], start=1):
        if w.text in ("-S", "--split-string") and i + 1 < len(words):
            return " ".join(x.text for x in words[i + 1:])
        if w.text.startswith("--split-string="):
            return w.text.partition("=")[2]
        if w.text.startswith("-S") and len(w.text) > 2:
            return w.text[2:]
    return None


def exec_commands(words: list[Word]) -> list[list[Word]]:
    """The commands `find ... -exec CMD {} ;` runs."""
    found, current = [], None
    for w in words[1:]:
        if current is None:
            if w.text in ("-exec", "-execdir", "-ok", "-okdir"):
                current = []
        elif w.text in (";", "+"):
            found.append(current)
            current = None
        else:
            current.append(w)
    if current:
        found.append(current)
    return [c for c in found if c]


ANSI_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
                "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
ANSI_NUMERIC = re.compile(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3})")


def dequote(raw: str) -> str:
    """Remove bash quoting from one word's source text, decoding $'...' escapes."""
    out, i = [], 0
    while i < len(raw):
        ch = raw[i]
        if raw.startswith("$'", i):
            end = ansi_end(raw, i + 2)
            out.append(ansi_decode(raw[i + 2:end]))
            i = end + 1
        elif ch == "'":
            end = raw.find("'", i + 1)
            end = len(raw) if end < 0 else end
            out.append(raw[i + 1:end])
            i = end + 1
        elif raw.startswith('$"', i) or ch == '"':
            i += 2 if ch == "$" else 1
            while i < len(raw) and raw[i] != '"':
                if raw[i] == "\\" and i + 1 < len(raw) and raw[i + 1] in '$`"\\\n':
                    i += 1
                if raw[i] != "\n" or raw[i - 1] != "\\":  # backslash-newline joins lines
                    out.append(raw[i])
                i += 1
            i += 1
        elif ch == "\\" and i + 1 < len(raw):
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def ansi_end(raw: str, i: int) -> int:
    while i < len(raw) and raw[i] != "'":
        i += 2 if raw[i] == "\\" else 1
    return min(i, len(raw))


def ansi_decode(body: str) -> str:
    def number(m: re.Match) -> str:
        code = m.group(1)
        return chr(int(code[1:], 16)) if code[0] in "xuU" else chr(int(code, 8))

    out, i = [], 0
    while i < len(body):
        m = ANSI_NUMERIC.match(body, i)
        if m:
            out.append(number(m))
            i = m.end()
        elif body[i] == "\\" and i + 1 < len(body):
            out.append(ANSI_ESCAPES.get(body[i + 1], "\\" + body[i + 1]))
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)
