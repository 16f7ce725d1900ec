"""Approval mode `plan`: the model may read, search and run commands, but nothing changes the workspace.

The guarantee is the kernel's, not this module's: in plan mode the shell runs in the sandbox with the
workspace bound read-only (sandbox/executor.py `ReadOnlyWhen`), so a write fails with EROFS whatever the
command line looks like. This module only refuses what the sandbox cannot cover: the file tools (they
write from loop's own process), MCP tools (they act outside any sandbox: asked), and without bubblewrap
every shell command but a short set the parser can show to be read-only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .decision import Decision
from .parse import Command, parse
from .paths import is_harmless_device
from .unparseable import Unparseable

RULE_PLAN = "mode plan"
PLAN_REFUSAL = ("plan mode is on: nothing may change the workspace, so {name} was not run. Read, search and "
                "run read-only commands, then answer with your plan; the user leaves plan mode to carry it out.")
# Without bubblewrap: programs that only read, and the options that would make one write or run code.
READERS = frozenset({"cat", "ls", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "find", "pwd"})
GIT_READERS = frozenset({"status", "log", "diff", "show"})
FIND_ACTIONS = ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls")
RG_RUNS = ("--pre", "--pre-glob", "--search-zip", "-z")  # --pre runs a program on each file
GIT_WRITES = ("--output", "-o", "--ext-diff", "--textconv")
UNSANDBOXED = ("plan mode without the sandbox runs only commands that cannot write: cat, ls, head, tail, wc, "
               "grep, rg, find (without -exec or -delete), git status|log|diff|show, without redirections")


def plan_decision(name: str, effect: str, command: str, check: Callable[[str], Decision], sandbox: str) -> Decision:
    """The decision in mode `plan` for a call that is not a read (reads are judged as in every mode): `check`
    is the policy's shell check (its deny rules hold in plan mode too), `sandbox` its sandbox state."""
    if effect == "edit":
        return Decision("deny", PLAN_REFUSAL.format(name=name), RULE_PLAN)
    if effect == "external":
        return Decision("ask", f"{name} acts outside the workspace's sandbox: in plan mode it needs approval",
                        RULE_PLAN)
    found = check(command)
    if found.verdict == "deny":
        return found
    if sandbox == "sandboxed":  # the kernel keeps the workspace read-only: nothing to ask
        return Decision("allow", rule=f"{RULE_PLAN} (sandboxed, workspace read-only)")
    why = unsandboxed_refusal(command)
    if why:
        return Decision("deny", f"{why}; {UNSANDBOXED}", RULE_PLAN)
    return Decision("allow", rule=f"{RULE_PLAN} (a read-only command)")


def unsandboxed_refusal(command: str) -> str:
    """Why `command` may change something when no sandbox holds it ('' when it only reads)."""
    try:
        commands = parse(command)
    except Unparseable as exc:
        return f"the command cannot be checked ({exc})"
    for cmd in commands:
        why = writer(cmd)
        if why:
            return why
    return ""


def writer(cmd: Command) -> str:
    """Why one simple command may write or run code ('' when it is a known reader)."""
    if not cmd.words:
        return "an assignment or an empty command"
    if cmd.dynamic or cmd.unknown or cmd.appended or cmd.code or cmd.carrier:
        return f"{cmd.text!r}: part of it is only known at run time"
    if cmd.assigns:
        return f"{cmd.full_text!r} sets variables"
    if any(not is_harmless_device(t) for t in cmd.writes):
        return f"{cmd.text!r} writes to {next(t for t in cmd.writes if not is_harmless_device(t))}"
    prog, args = cmd.program, cmd.words[1:]
    if prog == "git":
        if not args or args[0] not in GIT_READERS:
            return f"{cmd.text!r} is not git status, log, diff or show"
        return flagged(cmd, args, GIT_WRITES)
    if prog not in READERS:
        return f"{prog} is not a known read-only program"
    if prog == "find":
        return flagged(cmd, args, FIND_ACTIONS)
    if prog == "rg":
        return flagged(cmd, args, RG_RUNS)
    return ""


def flagged(cmd: Command, args: Sequence[str], options: Sequence[str]) -> str:
    for word in args:
        head = word.partition("=")[0]
        if head in options:
            return f"{cmd.text!r}: {head} may write or run a program"
    return ""
