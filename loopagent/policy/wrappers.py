"""Programs that run other programs, and the options around a program that change what runs.

Tables plus the functions that read them: which wrappers (`env`, `timeout 5`, `xargs`...) to look
through, which shell options read startup files, which variables change the code a command runs,
and which interpreter flags carry inline code. Programs' global options are in options.py.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loopagent.policy.parse import Word

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "ash", "yash", "rbash"})
# Options of the wrappers that take a separate value (`timeout -s KILL 5 cmd`).
WRAPPERS: dict[str, set[str]] = {
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
    "time": {"-f", "--format", "-o", "--output"},
    "chronic": set(),
    "unbuffer": set(),
    "caffeinate": set(),
    "catchsegv": set(),
    "flock": {"-w", "--timeout", "-E", "--conflict-exit-code"},
    "taskset": set(),
    "chrt": set(),
}
# Wrappers whose first operand is theirs, not the command's (`flock LOCKFILE cmd`, `taskset MASK cmd`).
FIRST_OPERAND = {"timeout", "flock", "taskset", "chrt"}
# Variables that change which code a command runs or which directory `cd` goes to.
JUDGED_ENV = re.compile(
    r"(BASH_ENV|ENV|BASH_FUNC_.*|LD_.*|DYLD_.*|GIT_.*|PATH|PROMPT_COMMAND|PS4|PYTHON.*|PERL5.*|PERLLIB"
    r"|PERL_.*|RUBY.*|NODE_OPTIONS|NODE_PATH|IFS|SHELLOPTS|BASHOPTS|GLOBIGNORE|HOME|ZDOTDIR|EDITOR"
    r"|VISUAL|PAGER|MANPAGER|LESSOPEN|LESSCLOSE|BROWSER|SSH_ASKPASS|SUDO_ASKPASS|JAVA_TOOL_OPTIONS"
    r"|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|GCONV_PATH|LOCPATH|NLSPATH|HOSTALIASES|MAKEFLAGS|MFLAGS|MAKELEVEL"
    r"|[Nn][Pp][Mm]_[Cc][Oo][Nn][Ff][Ii][Gg]_.*|CARGO_.*|RUSTC_WRAPPER|RUSTC|INPUTRC|HISTFILE|LUA_.*"
    r"|PHPRC|PHP_INI_SCAN_DIR|BUNDLE_.*|GEM_.*|XDG_CONFIG_HOME|CDPATH|SHELL|TERMINFO|PERLDB_OPTS)")
# Letters of `bash -xyz` that neither read startup files nor change where code comes from.
PLAIN_SHELL_FLAGS = frozenset("ceuxvfnaCEhBHTP")
PLAIN_SHELL_LONG = frozenset({"--norc", "--noprofile", "--posix", "--noediting", "--restricted"})
PLAIN_SET_OPTIONS = frozenset({"errexit", "nounset", "pipefail", "xtrace", "verbose", "noglob",
                               "noclobber", "posix", "errtrace", "functrace", "noexec"})
PYTHON = re.compile(r"(python|pypy)(\d+(\.\d+)*)?[mtd]?")
# Interpreter -> the short option letters and long options that take inline code.
INLINE_CODE: dict[str, tuple[str, frozenset[str]]] = {
    "python": ("c", frozenset()),
    "perl": ("eE", frozenset()),
    "ruby": ("e", frozenset()),
    "node": ("ep", frozenset({"--eval", "--print"})),
    "nodejs": ("ep", frozenset({"--eval", "--print"})),
    "bun": ("e", frozenset({"--eval", "--print"})),
    "php": ("r", frozenset()),
    "lua": ("e", frozenset()),
    "luajit": ("e", frozenset()),
    "Rscript": ("e", frozenset()),
    "osascript": ("e", frozenset()),
    "jshell": ("", frozenset()),
}
SUBCOMMAND_CODE = {"deno": {"eval", "repl"}, "bun": {"eval"}}
# Interpreters that read a program from stdin when given no script operand.
INTERPRETERS = frozenset({"python", "perl", "ruby", "node", "nodejs", "php", "lua", "luajit", "deno",
                          "bun", "Rscript", "osascript", "tclsh", "wish", "irb", "jshell", "R"})
# Builtins that run code or change what a name runs: the program is only known at run time.
DYNAMIC_BUILTINS = {
    "eval": "eval runs a string built at run time",
    "source": "source runs a file in the current shell",
    ".": ". runs a file in the current shell",
    "alias": "an alias changes what a command name runs",
    "hash": "hash -p changes what a command name runs",
    "trap": "trap runs code when a signal or exit happens",
    "enable": "enable loads builtins from a shared library",
    "fc": "fc runs commands from the history",
    "bind": "bind -x runs code on a key",
    "complete": "complete -C runs code on completion",
    "compgen": "compgen -C/-F runs code",
    "mapfile": "mapfile -C runs a callback",
    "readarray": "readarray -C runs a callback",
    "let": "let evaluates array subscripts, which can run commands",
    "coproc": "coproc runs a command in the background",
}
# Builtins that may evaluate an argument's array subscript (`a[$(cmd)]`) as code.
SUBSCRIPT_EVALUATORS = frozenset({"declare", "typeset", "local", "export", "readonly", "printf", "read",
                                  "unset", "test", "[", "getopts", "wait", "shift", "return"})
ASSIGNING_BUILTINS = frozenset({"declare", "typeset", "local", "export", "readonly"})


@dataclass
class Unwrapped:
    """What a command line's words run once wrappers are removed."""

    words: list[Word]
    reparse: list[str] = field(default_factory=list)  # strings bash parses again (`bash -c`, `eval`)
    extra: list[list[Word]] = field(default_factory=list)  # commands find -exec runs
    assigns: list[str] = field(default_factory=list)  # `env VAR=x`
    chdir: bool = False  # runs in another directory (`env -C dir`)
    appended: bool = False  # gets arguments only known at run time (xargs)
    replace: str = ""  # xargs -I's placeholder
    code: str = ""  # why what runs is code the rules cannot see (shell startup options)


def base(word: str) -> str:
    """The program a word names; all `python3.12`s are `python`."""
    name = posixpath.basename(word)
    return "python" if PYTHON.fullmatch(name) else name


def unwrap(words: list[Word]) -> Unwrapped:
    """Strip wrapper programs; return the real command and what else it hands to bash."""
    out = Unwrapped(words)
    while out.words:
        name = base(out.words[0].text)
        if name in SHELLS:
            script, out.code = shell_script(out.words)
            if script is not None:
                out.reparse.append(script)
            return out
        if name in ("eval", "alias"):
            texts = [w.text for w in out.words[1:]]
            out.reparse += [" ".join(texts)] if name == "eval" else [t.partition("=")[2] for t in texts if "=" in t]
            return out
        if name == "watch":  # runs its arguments with sh -c
            out.reparse.append(" ".join(w.text for w in skip_options({"-n", "--interval"}, out.words[1:], out)))
            return out
        if name == "find":
            out.extra = exec_commands(out.words)
            return out
        if name == "command" and len(out.words) > 1 and out.words[1].text in ("-v", "-V"):
            return out  # a lookup, not a run
        if name == "env":
            split = env_split_string(out.words)
            if split is not None:
                out.reparse.append(split)
                return out
        if name not in WRAPPERS:
            return out
        unwrap_one(name, out)
    return out


def unwrap_one(name: str, out: Unwrapped) -> None:
    """Remove one wrapper and its options from `out.words`."""
    rest = skip_options(WRAPPERS[name], out.words[1:], out, env=name == "env")
    if name in FIRST_OPERAND and rest:
        rest = rest[1:]  # timeout's duration, flock's lock file
    if name == "xargs":
        out.appended = True
        opts = [w.text for w in out.words[1:len(out.words) - len(rest)]]
        for i, t in enumerate(opts):
            if t in ("-I", "--replace") and i + 1 < len(opts):
                out.replace = opts[i + 1]
            elif t.startswith(("-I", "--replace=")) and len(t) > 2:
                out.replace = t.partition("=")[2] if t.startswith("--") else t[2:]
            elif t == "-i":
                out.replace = "{}"
        rest = rest or [type(out.words[0])("echo")]  # what xargs runs by default
    if name == "env" and any(w.text in ("-C", "--chdir") or w.text.startswith("--chdir=")
                             for w in out.words[1:len(out.words) - len(rest)]):
        out.chdir = True
    out.words = rest


def skip_options(takes_value: set[str], rest: list[Word], out: Unwrapped, env: bool = False) -> list[Word]:
    """The words after a wrapper's own options (and env's VAR=x, kept in `out.assigns`)."""
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
        elif env and "=" in t and not t.startswith("="):
            out.assigns.append(t)
            i += 1
        else:
            break
    return rest[i:]


def shell_script(words: Sequence[Word]) -> tuple[str | None, str]:
    """The string a shell runs with -c (None when it runs a file or stdin), and why its options are judged."""
    has_c, judged, i = False, "", 1
    while i < len(words):
        t = words[i].text
        if t in ("-o", "+o") and i + 1 < len(words):
            if words[i + 1].text not in PLAIN_SET_OPTIONS:
                judged = judged or f"the shell option {t} {words[i + 1].text}"
            i += 2
            continue
        if t in ("-O", "+O", "--rcfile", "--init-file"):
            judged = judged or f"the shell option {t}"
            i += 2
            continue
        if t == "--":
            i += 1
            break
        if t.startswith("--"):
            if t not in PLAIN_SHELL_LONG:
                judged = judged or f"the shell option {t}"
        elif t.startswith(("-", "+")) and len(t) > 1:
            has_c |= "c" in t
            if set(t[1:]) - PLAIN_SHELL_FLAGS:
                judged = judged or f"the shell option {t}"
        else:
            break
        i += 1
    if judged:
        judged += " reads startup files or changes what the shell runs"
    if has_c and i < len(words):
        return words[i].text, judged
    return None, judged


def env_split_string(words: Sequence[Word]) -> str | None:
    """`env -S 'cmd args'` splits a string into a command line; return that string."""
    for i, w in enumerate(words[1:], start=1):
        if w.text in ("-S", "--split-string") and i + 1 < len(words):
            return " ".join(x.text for x in words[i + 1:])
        if w.text.startswith("--split-string="):
            return w.text.partition("=")[2]
        if w.text.startswith("-S") and len(w.text) > 2:
            return w.text[2:]
    return None


def exec_commands(words: Sequence[Word]) -> list[list[Word]]:
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


def inline_code(words: Sequence[str]) -> str:
    """Why this command runs inline code (`python -c`, `perl -e`, `deno eval`), or ""."""
    prog = base(words[0]) if words else ""
    args = words[1:]
    if prog in SUBCOMMAND_CODE and args and args[0] in SUBCOMMAND_CODE[prog]:
        return f"{prog} {args[0]} runs inline code"
    if prog in ("awk", "gawk", "mawk", "nawk", "busybox") or prog == "sed":
        return script_tool_code(prog, args)
    letters, longs = INLINE_CODE.get(prog, ("", frozenset()))
    for a in args:
        if a in longs or a.partition("=")[0] in longs:
            return f"{prog} {a} runs inline code"
        if a.startswith("-") and not a.startswith("--") and letters and set(a[1:]) & set(letters):
            return f"{prog} {a} runs inline code"
        if not a.startswith("-"):
            break  # a script file: judged like any program
    return ""


def script_tool_code(prog: str, args: Sequence[str]) -> str:
    """awk's system()/pipes and sed's `e` command run shell commands."""
    text = " ".join(args)
    if prog != "sed" and re.search(r"system\s*\(|\|\s*getline|print[^;}]*\|", text):
        return f"{prog} program runs shell commands"
    if prog == "sed" and re.search(r"(^|[;\n{}\s'])\d*e(\s|;|$)|s(.)(?:(?!\3).)*\3(?:(?!\3).)*\3[gpiImM0-9w]*e", text):
        return "sed's e command runs shell commands"
    return ""


def runs_input(words: Sequence[str]) -> bool:
    """Does this program execute what it reads on stdin (a shell without -c or a file, a bare interpreter)?"""
    prog = base(words[0]) if words else ""
    args = list(words[1:])
    if prog in SHELLS:
        operands = [a for a in args if not a.startswith(("-", "+"))]
        if any(a.startswith("-") and "c" in a and not a.startswith("--") for a in args):
            return False
        return not operands or "-s" in args or operands[0].startswith(("<(", "/dev/stdin", "/dev/fd/"))
    if prog in ("eval", "source", "."):
        return True
    if prog not in INTERPRETERS or "-m" in args or inline_code(words):
        return False
    operands = [a for a in args if a == "-" or not a.startswith("-")]
    return not operands or operands[0] in ("-", "/dev/stdin") or operands[0].startswith("<(")


def judged_assignments(assigns: Sequence[str]) -> list[str]:
    """The names among `NAME=value` words that change what code runs."""
    return [name for name in (a.partition("=")[0] for a in assigns)
            if JUDGED_ENV.fullmatch(re.sub(r"\[.*", "", name).lstrip("+"))]
