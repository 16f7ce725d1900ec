"""Permission policy: ALLOW, ASK or DENY for each call before it runs. Pure: no I/O.

Order of a shell decision: built-in and user deny rules (every mode, `all`
included), then what may never run unasked (unparseable or dynamic commands,
writes outside the workspace), then the mode and the user's allow rules.
Nothing here reads AGENTS.md or any other file: instructions never change permissions.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import PurePath
from typing import Literal

from loopagent.shellparse import SHELLS, Command, Unparseable, parse

Verdict = Literal["allow", "ask", "deny"]
MODES = ("ask", "edits", "all")
EDIT_TOOLS = frozenset({"write_file", "edit_file"})

ROOT_PROGRAMS = frozenset({"sudo", "su", "doas", "pkexec", "run0", "runuser"})
FORMATTERS = frozenset({"mke2fs", "mkswap", "wipefs"})
DOWNLOADERS = frozenset({"curl", "wget"})
CODE_RUNNERS = SHELLS | {"eval", "source", "."}
INTERPRETERS = frozenset({"python", "python3", "perl", "ruby", "node"})
DEVICE_WRITERS = frozenset({"cp", "mv", "install", "shred", "blkdiscard", "truncate", "tee"})
HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty"})
FORCE_FLAGS = ("--force", "--force-with-lease", "--force-if-includes", "--mirror")
GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"})
# Programs the built-in rules look at; fail-closed scanning starts a command at each of them.
JUDGED = ROOT_PROGRAMS | FORMATTERS | DEVICE_WRITERS | {"rm", "dd", "git"}
TOOL_RULE = re.compile(r"([a-z_][a-z0-9_]*)\((.*)\)", re.S)
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
FORK_BOMB = re.compile(r"([\w:.]+)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1")
ALWAYS_DENIED = re.compile(r"(?<![\w.-])(sudo|su|doas|pkexec|run0|runuser|mkfs[\w.]*)(?![\w-])")

RULE_ROOT = "built-in: sudo/su/doas"
RULE_RM = "built-in: rm -r of /, ~, $HOME or a path outside the workspace"
RULE_MKFS = "built-in: mkfs"
RULE_DEVICE = "built-in: dd of=/dev/... and writes to devices"
RULE_FORK = "built-in: fork bomb"
RULE_PUSH = "built-in: git push --force"
RULE_PIPE = "built-in: curl/wget piped to a shell"


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str = ""
    rule: str = ""


@dataclass(frozen=True)
class Rule:
    """A user's allow or deny pattern: glob on a shell command, or `tool(glob)` on a tool's path."""

    verdict: Literal["allow", "deny"]
    text: str  # as written in the config
    source: str = ""  # "user file /home/me/.loop/config.json line 4"

    @property
    def tool(self) -> str:
        m = TOOL_RULE.fullmatch(self.text.strip())
        return m.group(1) if m else "shell"

    @property
    def pattern(self) -> str:
        m = TOOL_RULE.fullmatch(self.text.strip())
        return " ".join((m.group(2) if m else self.text).split())

    def describe(self) -> str:
        return f'{self.source or "rule"}: {self.verdict} "{self.text}"'

    def matches(self, text: str) -> bool:
        """Glob match; a deny pattern also covers the same command with more arguments."""
        pat = self.pattern
        if fnmatchcase(text, pat):
            return True
        if pat.endswith(" *") and text == pat[:-2]:
            return True  # "pytest *" covers a bare `pytest`
        return self.verdict == "deny" and fnmatchcase(text, pat + " *")


class Policy:
    """Decides each call from the approval mode, the built-in deny rules and the user's rules."""

    def __init__(self, mode: str = "edits", rules: Iterable[Rule] = (), workspace: str | PurePath | None = None):
        if mode not in MODES:
            raise ValueError(f"approval mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self.rules = tuple(rules)
        # Only path arithmetic is done with it; a placeholder keeps the policy usable without one.
        self.root = posixpath.normpath(str(workspace)) if workspace else "/workspace"

    def decide(self, tool: str, args: dict, read_only: bool) -> Decision:
        """ALLOW, ASK or DENY for one validated call."""
        if tool == "shell":
            return self.check(str(args.get("command") or ""))
        subject = tool_subject(args)
        for rule in self.tool_rules(tool, "deny"):
            if rule.matches(subject):
                return Decision("deny", f"{tool} {subject} matches a deny rule", rule.describe())
        if read_only:
            return Decision("allow", rule="read-only tool")
        for rule in self.tool_rules(tool, "allow"):
            if rule.matches(subject):
                return Decision("allow", rule=rule.describe())
        if self.mode == "all" or (self.mode == "edits" and tool in EDIT_TOOLS):
            return Decision("allow", rule=f"mode {self.mode}")
        return Decision("ask", f"{tool} needs approval in mode {self.mode}", f"mode {self.mode}")

    def check(self, command: str) -> Decision:
        """The decision for a shell command line."""
        try:
            commands = parse(command)
        except Unparseable as exc:
            return self.fail_closed(command) or Decision(
                "ask", f"{exc}; a command that cannot be checked always needs approval",
                "built-in: unparseable command")
        denied, floor = self.scan(commands)
        if denied:
            return denied
        if any(c.opaque or reads_piped_code(c) for c in commands):
            return self.fail_closed(command) or Decision(
                "ask", "what part of this command runs is only known at run time", "built-in: dynamic command")
        if floor:
            return floor
        if self.mode == "all":
            return Decision("allow", rule="mode all")
        allowed = self.allowed(commands)
        if allowed:
            return Decision("allow", rule="; ".join(dict.fromkeys(r.describe() for r in allowed)))
        return Decision("ask", f"shell commands need approval in mode {self.mode}", f"mode {self.mode}")

    def scan(self, commands: Sequence[Command]) -> tuple[Decision | None, Decision | None]:
        """The first denial, and the first reason the command may not run unasked."""
        cwd: str | None = self.root
        floor = None
        for cmd in commands:  # no cap: the 61st command of a chain is checked like the first
            found = builtin(cmd, cwd, self.root) or self.user_denial(cmd)
            if found and found.verdict == "deny":
                return found, None
            floor = floor or found or self.outside_writes(cmd, cwd)
            cwd = next_cwd(cmd, cwd)
        return None, floor

    def user_denial(self, cmd: Command) -> Decision | None:
        texts = {cmd.text, cmd.full_text, " ".join([cmd.program, *cmd.words[1:]])}
        for rule in self.tool_rules("shell", "deny"):
            if any(rule.matches(t) for t in texts):
                return Decision("deny", f"{cmd.text!r} matches a deny rule", rule.describe())
        return None

    def outside_writes(self, cmd: Command, cwd: str | None) -> Decision | None:
        for target in cmd.writes:
            if is_harmless_device(target):
                continue
            where = resolve(target, cwd)
            if where is None or not inside(where, self.root):
                return Decision("ask", f"writes to {target}, outside the workspace",
                                "built-in: writes outside the workspace")
        return None

    def allowed(self, commands: Sequence[Command]) -> list[Rule]:
        """The allow rules that cover EVERY command, or [] when one is not covered."""
        used = []
        for cmd in commands:
            if cmd.carrier:
                continue  # `bash -c '...'` is judged by the commands inside it
            prefix = cmd.full[: len(cmd.full) - len(cmd.words)]
            texts = [cmd.full_text] if any(ASSIGNMENT.match(w) for w in prefix) else [cmd.text, cmd.full_text]
            rule = next((r for r in self.tool_rules("shell", "allow") if any(map(r.matches, texts))), None)
            if rule is None or not cmd.words:
                return []
            used.append(rule)
        return used

    def fail_closed(self, raw: str) -> Decision | None:
        """For text that could not be checked exactly: deny when it names a denied program anywhere."""
        text = re.sub(r"[\\'\"]", "", raw)  # r''m -> rm
        hit = ALWAYS_DENIED.search(text)
        if hit:
            return Decision("deny", f"this command cannot be checked exactly and mentions {hit.group(1)}",
                            f"{RULE_MKFS if hit.group(1).startswith('mkfs') else RULE_ROOT} (fail closed)")
        if FORK_BOMB.search(text):
            return Decision("deny", "this looks like a fork bomb", RULE_FORK)
        flat = " ".join(text.split())
        for rule in self.tool_rules("shell", "deny"):
            name = re.split(r"[*?\[]", rule.pattern, maxsplit=1)[0].strip()
            if name and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", flat):
                return Decision("deny", f"this command cannot be checked exactly and mentions {name}",
                                f"{rule.describe()} (fail closed)")
        for segment in re.split(r"[;&|()\n`{}]|\$\(", text):
            words = segment.split()
            # any word may be where a command starts (`echo "rm -rf /" | bash`): try each one
            for i, word in enumerate(words):
                if posixpath.basename(word) in JUDGED or word.startswith("mkfs"):
                    found = builtin(Command(tuple(words[i:])), None, self.root)
                    if found and found.verdict == "deny":
                        return Decision("deny", found.reason, f"{found.rule} (fail closed)")
        return None

    def tool_rules(self, tool: str, verdict: str) -> list[Rule]:
        return [r for r in self.rules if r.verdict == verdict and r.tool == tool]


def tool_subject(args: dict) -> str:
    """What a per-tool rule matches: the path (normalised) or the pattern."""
    path = args.get("path")
    if isinstance(path, str) and path:
        return posixpath.normpath(path).removeprefix("./")
    return str(args.get("pattern") or "")


def builtin(cmd: Command, cwd: str | None, root: str) -> Decision | None:
    """The built-in rules for one command: a deny, an ask, or None."""
    prog, args = cmd.program, cmd.words[1:]
    if prog in ROOT_PROGRAMS:
        return Decision("deny", f"{prog} runs commands as another user; loop never does", RULE_ROOT)
    if prog.startswith("mkfs") or prog in FORMATTERS:
        return Decision("deny", f"{prog} destroys a filesystem", RULE_MKFS)
    if prog and prog in cmd.functions:
        return Decision("deny", f"function {prog} calls itself (fork bomb)", RULE_FORK)
    if DOWNLOADERS & set(cmd.fed_by) and runs_input(prog, args):
        return Decision("deny", f"{prog} would run code downloaded by {'/'.join(DOWNLOADERS & set(cmd.fed_by))}",
                        RULE_PIPE)
    if prog == "git" and force_push(args):
        return Decision("deny", "force-pushing rewrites the remote's history", RULE_PUSH)
    device = device_write(cmd)
    if device:
        return Decision("deny", f"writes to the device {device}", RULE_DEVICE)
    if prog == "rm":
        return rm_verdict(args, cwd, root)
    return None


def reads_piped_code(cmd: Command) -> bool:
    """`... | bash`, `... | python3`: what runs arrives on stdin and cannot be checked."""
    return bool(cmd.fed_by) and not cmd.carrier and runs_input(cmd.program, cmd.words[1:])


def runs_input(prog: str, args: Sequence[str]) -> bool:
    """Does this program execute what it reads (a shell, eval, or a bare interpreter)?"""
    if prog in CODE_RUNNERS:
        return True
    if prog not in INTERPRETERS or "-c" in args or "-m" in args:
        return False
    operands = [a for a in args if a == "-" or not a.startswith("-")]
    return not operands or operands[0] == "-" or operands[0].startswith("<(")


def force_push(args: Sequence[str]) -> bool:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in GIT_VALUE_OPTIONS else 1
    if i >= len(args) or args[i] != "push":
        return False
    for a in args[i + 1:]:
        if a.startswith(FORCE_FLAGS) or a.startswith("+"):
            return True
        if a.startswith("-") and not a.startswith("--") and "f" in a:
            return True  # -f, -uf, -fu
    return False


def device_write(cmd: Command) -> str | None:
    targets = list(cmd.writes)
    if cmd.program == "dd":
        targets += [a[3:] for a in cmd.words[1:] if a.startswith("of=")]
    if cmd.program in DEVICE_WRITERS:
        targets += [a for a in cmd.words[1:] if a.startswith("/dev/")]
    for t in targets:
        path = clean(t)
        if path.startswith("/dev/") and not is_harmless_device(path):
            return path
    return None


def rm_verdict(args: Sequence[str], cwd: str | None, root: str) -> Decision | None:
    recursive, targets, options = False, [], True
    for a in args:
        if options and a == "--":
            options = False
        elif options and a == "--no-preserve-root":
            return Decision("deny", "rm --no-preserve-root can delete /", RULE_RM)
        elif options and a.startswith("--"):
            recursive |= a == "--recursive"
        elif options and a.startswith("-") and len(a) > 1:
            recursive |= "r" in a or "R" in a
        else:
            targets.append(a)
    if not recursive:
        return None
    ask = None
    for target in (t for raw in targets for t in braces(raw)):
        danger = rm_danger(target, cwd, root)
        if danger == "unknown":
            ask = ask or Decision("ask", f"cannot tell which directory rm -r {target} removes after cd", RULE_RM)
        elif danger:
            return Decision("deny", f"rm -r of {target}: {danger}", RULE_RM)
    return ask


def rm_danger(target: str, cwd: str | None, root: str) -> str | None:
    """Why removing `target` recursively is never wanted, 'unknown', or None."""
    base = strip_glob(target)
    if base.startswith("~") or re.match(r"\$(HOME\b|\{HOME\})", base):
        head, _, rest = base.partition("/")
        if head.startswith("~") and head != "~":
            return "another user's home directory"
        home = posixpath.normpath("/HOME/" + strip_glob(rest))
        return "your home directory" if not home.startswith("/HOME/") else None
    if base.startswith("$"):
        rest = re.sub(r"^\$(\{[^}]*\}|\w+)", "", target)
        return "an empty variable would make this /" if rest.startswith("/") and strip_glob(rest) == "/" else None
    if not base.startswith("/") and cwd is None:
        return "unknown"
    path = clean(base) if base.startswith("/") else posixpath.normpath(posixpath.join(cwd, base))
    if path == "/" or path.count("/") == 1:
        return "/ or a top-level system directory"
    if inside(root, path):
        return "the workspace or a directory containing it"
    if ".." in base.split("/") and not inside(path, root):
        return "it leaves the workspace through .."
    return None


def next_cwd(cmd: Command, cwd: str | None) -> str | None:
    """Follow `cd` so later relative paths resolve where bash would resolve them; None when unknown."""
    if cmd.program == "popd":
        return None
    if cmd.program not in ("cd", "pushd"):
        return cwd
    args = [a for a in cmd.words[1:] if not a.startswith("-")]
    if not args:
        return None if "-" in cmd.words[1:] or not cmd.words[1:] else cwd
    return resolve(args[0], cwd)


def resolve(path: str, cwd: str | None) -> str | None:
    """Absolute form of `path` as bash in `cwd` sees it; None when it depends on the environment."""
    if path.startswith(("~", "$")) or "$(" in path or "`" in path:
        return None
    if path.startswith("/"):
        return clean(path)
    return None if cwd is None else posixpath.normpath(posixpath.join(cwd, path))


def clean(path: str) -> str:
    return posixpath.normpath(re.sub(r"^/+", "/", path)) if path.startswith("/") else posixpath.normpath(path)


def inside(path: str, root: str) -> bool:
    """Is `path` the directory `root` or below it?"""
    return path == root or path.startswith(root.rstrip("/") + "/")


def is_harmless_device(path: str) -> bool:
    path = clean(path) if path.startswith("/") else path
    return path in HARMLESS_DEVICES or path.startswith("/dev/fd/")


def strip_glob(path: str) -> str:
    """`dir/*` removes what `dir` holds, so judge `dir`; `*` alone is `.`."""
    parts = path.split("/")
    while len(parts) > 1 and (parts[-1] in ("", ".") or any(ch in parts[-1] for ch in "*?[")):
        parts.pop()
    if parts == [""]:
        return "/"
    if len(parts) == 1 and any(ch in parts[0] for ch in "*?["):
        return "."
    return "/".join(parts)


def braces(word: str) -> list[str]:
    """Brace expansion of `{a,b}` groups, enough to see `{/,x}` as `/` and `x`."""
    m = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if not m:
        return [word]
    return [x for alt in m.group(1).split(",") for x in braces(word[:m.start()] + alt + word[m.end():])]
