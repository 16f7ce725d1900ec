"""A bash command line as the simple commands it would run. Pure; read by the policy.

bashlex does the parsing. On top of it this module unwraps what only carries another
command (see wrappers.py), parses again what bash would parse again (`bash -c '...'`,
`eval`, `alias`, `env -S`, a here-document fed to a shell), and checks its own reading
against the source: every substitution bash would run must be one it parsed. Whatever it
cannot read exactly raises `Unparseable` or marks the command `dynamic`, so the policy can
fail closed. No input makes `parse` raise anything else.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, replace

from .options import canonical
from .quoting import dequote, substitution_starts, unquote_heredoc_delimiters
from .unparseable import MAX_DEPTH, Unparseable, why_unparseable
from .wrappers import (
    ASSIGNING_BUILTINS,
    DYNAMIC_BUILTINS,
    SHELLS,
    SUBSCRIPT_EVALUATORS,
    base,
    inline_code,
    judged_assignments,
    runs_input,
    unwrap,
)

EXPANSIONS = frozenset({"parameter", "commandsubstitution", "processsubstitution"})
SUBSTITUTIONS = frozenset({"commandsubstitution", "processsubstitution"})
VARIABLE = re.compile(r"\$[A-Za-z_{0-9@*#?$!-]")
OUTPUT_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
INPUT_REDIRECTS = frozenset({"<", "<<", "<<-", "<<<", "<&"})
FD_WORD = re.compile(r"\d*-?")  # `>&2`, `>&-`, `2>&1-`: a descriptor, not a file
FD_VARIABLE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")  # `{fd}>file` names a descriptor variable
LEAF_KINDS = frozenset({"reservedword", "operator", "pipe", "parameter", "tilde", "heredoc"})
GROUP_KINDS = frozenset({"list", "compound", "if", "for", "while", "until", "word", "assignment"})


@dataclass(frozen=True)
class Command:
    """One simple command as bash would run it, quoting resolved."""

    words: tuple[str, ...]  # program first; wrappers (`env`, `timeout 5`, ...) and VAR=x removed
    full: tuple[str, ...] = ()  # as written, with assignments and wrappers
    writes: tuple[str, ...] = ()  # output redirection targets (>, >>, &>, >|) and `tee` files
    fed_by: tuple[str, ...] = ()  # programs whose output this command can read (earlier pipe stages, $(...))
    functions: tuple[str, ...] = ()  # shell functions whose body this command is in
    dynamic: str = ""  # why what runs is only known at run time ($prog, eval, a function...)
    carrier: bool = False  # only hands a string to bash to parse (`bash -c`, `eval`): judged by its parts
    code: str = ""  # why it runs code no rule can see (python -c, BASH_ENV=, bash --rcfile)
    sealed: bool = False  # never matched by an allow rule (a judged assignment or shell option)
    unknown: frozenset[int] = frozenset()  # indices of words only known at run time ("$p", {} of find)
    appended: bool = False  # more arguments arrive at run time (xargs)
    stdin: str = ""  # how stdin is redirected: "", "heredoc", "herestring", "file"
    chdir: bool = False  # runs in a directory other than the shell's (env -C)
    assigns: tuple[str, ...] = ()  # NAME=value given to it (prefix or env)
    canon: tuple[str, ...] = ()  # words with the program's global options removed (what rules match)
    widened: bool = False  # the removed options change what runs: allow rules see only the literal text

    @property
    def program(self) -> str:
        return posixpath.basename(self.words[0]) if self.words else ""

    @property
    def opaque(self) -> bool:
        return bool(self.dynamic)

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def full_text(self) -> str:
        return " ".join(self.full or self.words)

    @property
    def canon_text(self) -> str:
        return " ".join(self.canon or self.words)


@dataclass(frozen=True)
class Word:
    text: str
    dynamic: bool = False  # contains $var, $(...), `...` or <(...)


def parse(line: str, depth: int = 0) -> list[Command]:
    """All simple commands of `line`, in order, nested ones included. Raises only Unparseable."""
    try:
        return parse_checked(line, depth)
    except Unparseable:
        raise
    except RecursionError:
        raise Unparseable("nested too deeply to check") from None
    except Exception as exc:  # a bashlex node shape the walker does not know: fail closed
        raise Unparseable(why_unparseable(line, f"the checker could not read it ({type(exc).__name__})")) from None


def parse_checked(line: str, depth: int) -> list[Command]:
    if depth > MAX_DEPTH:
        raise Unparseable(f"more than {MAX_DEPTH} nested levels of bash -c / eval")
    if not line.strip():
        return []
    bashlex = load_bashlex()
    text, literal_heredocs = unquote_heredoc_delimiters(line)
    try:
        trees = bashlex.parse(text)
    except Exception as exc:  # bashlex raises many types (ParsingError, NotImplementedError, ...)
        raise Unparseable(why_unparseable(line, f"bash syntax the checker does not understand: {exc}")) from None
    walker = Walker(text, depth, literal_heredocs)
    for tree in trees:
        walker.visit(tree, (), ())
    missed = substitution_starts(text, walker.heredocs) - walker.substitutions
    if missed:
        where = min(missed)
        raise Unparseable(why_unparseable(
            line, f"a substitution the checker cannot read{f' at {text[where:where + 12]!r}' if where >= 0 else ''}"))
    return walker.finish()


def load_bashlex():
    """bashlex (~0.25 s to import: paid at the first shell decision), with its endless loop closed.

    bashlex 0.18's `_paramexpand` takes `str.find('}')` of a `${` with no `}` in the same word
    (reachable after quote removal, e.g. `"${"'x'}`) as index -1 and then scans the word
    forever; a command must never hang the policy, so that case raises as a parse error.
    """
    import bashlex
    from bashlex import errors, subst

    original = subst._paramexpand
    if getattr(original, "loop_guarded", False):
        return bashlex

    def paramexpand(parserobj, string, sindex):
        if string[sindex + 1:sindex + 2] == "{" and string.find("}", sindex + 2) < 0:
            raise errors.ParsingError("bad substitution: no closing '}'", string, sindex)
        return original(parserobj, string, sindex)

    paramexpand.loop_guarded = True
    subst._paramexpand = paramexpand
    return bashlex


class Walker:
    """Collects Commands from bashlex trees; one per parse() call."""

    def __init__(self, text: str, depth: int, literal_heredocs: set[int]):
        self.text, self.depth, self.literal_heredocs = text, depth, literal_heredocs
        self.commands: list[Command] = []
        self.substitutions: set[int] = set()  # where the substitutions it read start
        self.heredocs: list[tuple[int, int]] = []  # here-document bodies (not shell syntax)
        self.defined: set[str] = set()  # functions defined on this line

    def finish(self) -> list[Command]:
        """The commands, a call of a function defined on the line marked dynamic."""
        return [replace(c, dynamic=c.dynamic or f"{c.program} is a shell function defined on this line")
                if c.program in self.defined and c.words[0] == c.program else c for c in self.commands]

    def visit(self, node, fed_by: tuple[str, ...], functions: tuple[str, ...]) -> None:
        kind = node.kind
        if kind == "command":
            self.simple(node, fed_by, functions)
        elif kind == "pipeline":
            upstream: list[str] = []
            for stage in node.parts:
                if stage.kind in ("pipe", "reservedword"):
                    continue
                start = len(self.commands)
                self.visit(stage, fed_by + tuple(upstream), functions)
                upstream += [c.program for c in self.commands[start:]]
        elif kind == "function":
            name = node.parts[0].word
            self.defined.add(name)
            for child in node.parts[1:]:
                self.visit(child, fed_by, functions + (name,))
        elif kind in SUBSTITUTIONS:
            self.substitutions.add(node.pos[0])
            self.visit(node.command, fed_by, functions)
        elif kind == "redirect":
            self.visit_word_parts(node.output, fed_by, functions)
            self.note_heredoc(node)
        elif kind in GROUP_KINDS:
            start = len(self.commands)
            for child in getattr(node, "parts", None) or getattr(node, "list", None) or []:
                self.visit(child, fed_by, functions)
            self.redirect_group(start, getattr(node, "redirects", None) or [], fed_by, functions)
        elif kind not in LEAF_KINDS:
            raise Unparseable(f"unsupported shell construct: {kind}")

    def note_heredoc(self, redirect) -> str | None:
        """Remember a here-document's body as data; return its text without the closing delimiter."""
        heredoc = getattr(redirect, "heredoc", None)
        if heredoc is None:
            return None
        self.heredocs.append(tuple(heredoc.pos))
        body = heredoc.value
        return body.rsplit("\n", 1)[0] if "\n" in body else ""

    def redirect_group(self, start: int, redirects: list, fed_by, functions) -> None:
        """`{ ...; } > file`: every command of the group writes to the file."""
        writes = tuple(t for t in map(self.output_target, redirects) if t is not None)
        for r in redirects:
            if getattr(r, "kind", "") == "redirect":
                self.visit(r, fed_by, functions)
        if writes:
            self.commands[start:] = [replace(c, writes=c.writes + writes) for c in self.commands[start:]]

    def output_target(self, redirect) -> str | None:
        if getattr(redirect, "kind", "") != "redirect" or redirect.type not in OUTPUT_REDIRECTS:
            return None
        if not hasattr(redirect.output, "pos"):
            return None  # `>&-`, `>&2`: bashlex gives the descriptor as a str or int
        target = self.word(redirect.output).text
        if redirect.type == ">&" and FD_WORD.fullmatch(target):
            return None
        return target

    def visit_word_parts(self, node, fed_by, functions) -> list[str]:
        """Visit the substitutions inside a word; return the programs they run."""
        if node is None or not hasattr(node, "kind"):
            return []
        start = len(self.commands)
        for child in getattr(node, "parts", None) or []:
            self.visit(child, fed_by, functions)
        return [c.program for c in self.commands[start:]]

    def word(self, node) -> Word:
        raw = self.text[node.pos[0]:node.pos[1]]
        parts = {p.kind for p in getattr(node, "parts", None) or []}
        # bashlex mangles $'...' and $"..." quoting; resolve those words from the source text.
        if parts & SUBSTITUTIONS or "`" in raw or "$(" in raw:
            return Word(node.word, True)
        # bashlex gets `'a'\''b'` and `$'\x72m'` wrong: resolve quoting from the source text.
        plain = re.sub(r"\$'(?:[^'\\]|\\.)*'?", "", raw)  # $'...' expands nothing
        return Word(dequote(raw), bool(parts & EXPANSIONS) and bool(VARIABLE.search(plain)))

    def simple(self, node, fed_by: tuple[str, ...], functions: tuple[str, ...]) -> None:
        s = Simple()
        parts = list(node.parts)
        for i, part in enumerate(parts):
            if part.kind in ("word", "assignment"):
                s.inner += self.visit_word_parts(part, fed_by, functions)
                w = self.word(part)
                nxt = parts[i + 1] if i + 1 < len(parts) else None
                if (nxt is not None and nxt.kind == "redirect" and FD_VARIABLE.fullmatch(w.text)
                        and part.pos[1] == nxt.pos[0]):
                    continue  # `{fd}>file`: part of the redirection, not an argument
                if part.kind == "assignment" and not s.words:
                    s.assigns.append(w.text)
                else:
                    s.words.append(w)
            elif part.kind == "redirect":
                self.redirect(part, s, fed_by, functions)
        feeds = fed_by + tuple(s.inner)
        if not s.words:
            if s.assigns or s.writes:  # `X=1`, or a bare `> file`
                self.add(judge_assignments(Command(tuple(s.assigns), tuple(s.assigns), tuple(s.writes), feeds,
                                                   functions, s.dynamic, assigns=tuple(s.assigns))))
            return
        self.emit(s.words, s.assigns, s.writes, feeds, functions, s)

    def redirect(self, part, s: Simple, fed_by, functions) -> None:
        s.inner += self.visit_word_parts(part.output, fed_by, functions)
        target = self.output_target(part)
        if target is not None:
            s.writes.append(target)
        if part.type in INPUT_REDIRECTS and getattr(part, "input", None) in (None, 0):
            body = self.note_heredoc(part)
            literal = part.pos[0] in self.literal_heredocs
            if body is not None:
                s.stdin, s.script = "heredoc", body
                if not literal and ("$" in body or "`" in body):
                    s.dynamic = s.dynamic or "the here-document expands $... or `...` at run time"
                    s.script_dynamic = True
            elif part.type == "<<<":
                s.stdin = "herestring"
                w = self.word(part.output) if hasattr(part.output, "pos") else Word(str(part.output), True)
                s.script, s.script_dynamic = w.text, w.dynamic
                if w.dynamic:
                    s.dynamic = s.dynamic or "the here-string expands $... or `...` at run time"
            elif s.stdin == "":
                s.stdin = "file"
        elif part.type in INPUT_REDIRECTS:
            self.note_heredoc(part)

    def emit(self, words: list[Word], assigns: list[str], writes: list[str], feeds: tuple[str, ...],
             functions: tuple[str, ...], s: Simple) -> None:
        full = tuple(assigns) + tuple(w.text for w in words)
        out = unwrap(words)
        words = out.words or [Word(t) for t in full]  # `exec >file`, a bare `nohup`: judge what was written
        texts = tuple(w.text for w in words)
        program = words[0]
        dynamic = s.dynamic or self.dynamic_reason(out, words)
        if base(texts[0]) == "tee":
            writes = writes + [t for t in texts[1:] if not t.startswith("-")]
        unknown = frozenset(i for i, w in enumerate(words) if w.dynamic or (out.replace and out.replace in w.text))
        assigns = list(assigns) + out.assigns
        canon, widening, code = canonical(texts)
        reads_code = runs_input(texts) and s.stdin in ("heredoc", "herestring")
        code = out.code or code or inline_code(texts) or (
            f"{program.text} reads code from a {s.stdin.replace('here', 'here-')}" if reads_code else "")
        cmd = Command(texts, full, tuple(writes), feeds, functions, dynamic, carrier=bool(out.reparse),
                      code=code, sealed=bool(out.code), unknown=unknown, appended=out.appended,
                      stdin=s.stdin, chdir=out.chdir, assigns=tuple(assigns), canon=canon, widened=bool(widening))
        self.add(judge_assignments(cmd))
        scripts = list(out.reparse)
        if reads_code and base(texts[0]) in SHELLS and not s.script_dynamic:
            scripts.append(s.script)  # the here-document is the script: judge what it runs
        for line in scripts:
            for inner in parse(line, self.depth + 1):
                self.add(replace(inner, fed_by=feeds + inner.fed_by, functions=functions + inner.functions))
        for sub in out.extra:  # find -exec: `{}` is a path only known at run time
            self.emit([Word(w.text, w.dynamic or "{}" in w.text) for w in sub], [], [], feeds, functions, Simple())

    def dynamic_reason(self, out, words: list[Word]) -> str:
        """Why the program this command runs is only known at run time, or ""."""
        program = words[0]
        name = base(program.text)
        if out.reparse and any(w.dynamic for w in words[1:]):
            return "it runs a script built at run time"
        if program.dynamic:
            return f"the program {program.text!r} is only known at run time"
        if any(ch in program.text for ch in "*?[{"):
            return f"the program {program.text!r} is a pattern or brace expansion"
        if name in DYNAMIC_BUILTINS:
            return DYNAMIC_BUILTINS[name]
        if name in SUBSCRIPT_EVALUATORS and any(re.search(r"\[.*(\$\(|`|\$\{|\$[A-Za-z_])", w.text)
                                                  for w in words[1:]):
            return f"{name} may evaluate an array subscript as code"
        if name in ("declare", "typeset", "export") and any(w.text.startswith("-") and "f" in w.text
                                                            for w in words[1:]):
            return f"{name} -f passes functions to other shells"
        return ""

    def add(self, command: Command) -> None:
        self.commands.append(command)


class Simple:
    """What one simple command has collected while its parts are walked."""

    def __init__(self):
        self.words: list[Word] = []
        self.assigns: list[str] = []
        self.writes: list[str] = []
        self.inner: list[str] = []
        self.dynamic = ""
        self.stdin = ""
        self.script = ""
        self.script_dynamic = False


def judge_assignments(cmd: Command) -> Command:
    """Mark a command whose NAME=value words (prefix, env, export) change what code runs."""
    assigns = list(cmd.assigns)
    if cmd.program in ASSIGNING_BUILTINS:
        assigns += [w for w in cmd.words[1:] if "=" in w and not w.startswith("-")]
    names = judged_assignments(assigns)
    if not names:
        return cmd
    if "CDPATH" in names:
        return replace(cmd, dynamic=cmd.dynamic or "CDPATH makes the directory cd goes to unknown", sealed=True)
    return replace(cmd, code=cmd.code or f"{', '.join(dict.fromkeys(names))}= changes what code runs",
                   sealed=True)
