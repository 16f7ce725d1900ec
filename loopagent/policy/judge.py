"""The Policy: ALLOW, ASK or DENY for each call before it runs. Pure: no I/O.

Order of a shell decision: built-in and user deny rules (every mode, `all` included), then
what may never run unasked (unreadable or dynamic commands, rm of a path known only at run
time, writes to protected places or outside the workspace), then the sandbox, then code no
rule can see (`python -c`, `BASH_ENV=`), then the mode and the user's allow rules.
Nothing here reads AGENTS.md or any other file: instructions never change permissions.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from pathlib import PurePath
from typing import TYPE_CHECKING, Protocol

from .builtin import RAW_WRITERS, RULE_DEVICE, builtin, fail_closed, protected_write, written
from .decision import MODES, SANDBOX_STATES, STRICTNESS, Decision
from .parse import Command, parse
from .paths import inside, is_harmless_device, relative, resolve
from .rules import Rule
from .unparseable import Unparseable
from .wrappers import runs_input

if TYPE_CHECKING:
    from loopagent.sandbox.executor import Sandbox
    from loopagent.tools.spec import Effect, ToolSpec
    from loopagent.tools.workspace import Workspace

RULE_UNREADABLE = "built-in: unreadable command"
RULE_DYNAMIC = "built-in: dynamic command"
RULE_CODE = "built-in: code no rule can check"
RULE_SANDBOX = "built-in: no sandbox"
RULE_OUTSIDE = "built-in: writes outside the workspace"


class Policy:
    """Decides each call from the approval mode, the built-in deny rules and the user's rules.

    A call is judged by what its tool's spec says it does (`effect`, `path_param`), never by the tool's
    name; `tools` are the specs it knows by name (default: the built-in tools), for callers that name a
    tool and for deny rules about one read tool, which keep every read tool away from the path.
    """

    def __init__(self, mode: str = "edits", rules: Iterable[Rule] = (), workspace: str | PurePath | None = None,
                 *, sandbox: str = "off", sandbox_problem: str = "",
                 resolve: Callable[[str], str | None] | None = None, tools: Iterable[ToolSpec] | None = None,
                 floor: str = "all"):
        if mode not in MODES:
            raise ValueError(f"approval mode must be one of {', '.join(MODES)}, not {mode!r}")
        if sandbox not in SANDBOX_STATES:
            raise ValueError(f"sandbox must be one of {', '.join(SANDBOX_STATES)}, not {sandbox!r}")
        self.mode = mode
        # The loosest mode this policy may be switched to (`/approval`, `/plan`): a project file that
        # forces plan mode is a floor no switch goes below.
        self.floor = floor if floor in MODES else "all"
        self.rules = tuple(rules)
        # Only path arithmetic is done with it; a placeholder keeps the policy usable without one.
        self.root = posixpath.normpath(str(workspace)) if workspace else "/workspace"
        self.sandbox, self.sandbox_problem = sandbox, sandbox_problem
        self.resolve = resolve
        self._tools = None if tools is None else tuple(tools)

    def switch(self, mode: str) -> str:
        """Put the policy in `mode`; '' when done, else why not (an unknown mode, or looser than the floor)."""
        if mode not in MODES:
            return f"approval mode must be one of {', '.join(MODES)}"
        if STRICTNESS.index(mode) < STRICTNESS.index(self.floor):
            return f"the project file sets approval {self.floor}; a switch may not loosen it"
        self.mode = mode
        return ""

    # -- tools -------------------------------------------------------------------------------

    @cached_property
    def known(self) -> dict[str, ToolSpec]:
        """The tools this policy knows by name (built only when asked: a shell check needs none)."""
        if self._tools is not None:
            return {spec.name: spec for spec in self._tools}
        from loopagent.tools import builtin_specs

        return {spec.name: spec for spec in builtin_specs()}

    @cached_property
    def read_tools(self) -> frozenset[str]:
        return frozenset(name for name, spec in self.known.items() if spec.effect == "read")

    def decide(self, tool: ToolSpec | str, args: dict, read_only: bool) -> Decision:
        """ALLOW, ASK or DENY for one validated call of `tool` (its spec, or the name of a tool this policy knows).

        A name it does not know is judged as an external tool without a path argument.
        """
        name, effect, path = self.kind(tool, args)
        if effect == "delegate":  # a child agent: each of its calls meets a policy no looser than this one
            denied = next(iter(self.tool_rules(name, "deny")), None)
            if denied is not None:
                return Decision("deny", f"{name} matches a deny rule", denied.describe())
            return Decision("allow", rule="a child agent: its own calls are judged")
        if self.mode == "plan" and effect != "read":
            from loopagent.tools.spec import COMMAND

            from .plan import plan_decision

            return plan_decision(name, effect, str(args.get(COMMAND) or ""), self.check, self.sandbox)
        if effect == "exec":
            from loopagent.tools.spec import COMMAND

            return self.check(str(args.get(COMMAND) or ""))
        if path:
            literal, real = relative(path, self.root), self.real(path)
            subjects = [literal] + ([real] if real is not None else [])
            deny_tools = self.read_tools | {name} if effect == "read" else {name}
        else:  # grep and list_files without a path: rules match their pattern
            literal = real = str(args.get("pattern") or "")
            subjects, deny_tools = [literal], {name}
        for rule in self.rules:
            if rule.verdict == "deny" and any(rule.names(t) for t in deny_tools) and any(map(rule.matches, subjects)):
                return Decision("deny", f"{name} {literal} matches a deny rule", rule.describe())
        if read_only:
            return Decision("allow", rule="read-only tool")
        for rule in self.tool_rules(name, "allow"):  # a symlink never widens an allow: both must match
            if rule.matches(literal) and real is not None and rule.matches(real):
                return Decision("allow", rule=rule.describe())
        if self.mode == "all" or (self.mode == "edits" and effect == "edit"):
            return Decision("allow", rule=f"mode {self.mode}")
        return Decision("ask", f"{name} needs approval in mode {self.mode}", f"mode {self.mode}")

    def kind(self, tool: ToolSpec | str, args: dict) -> tuple[str, Effect, str]:
        """The call's tool name, what the tool does, and the workspace path the call names ("" for none)."""
        spec = self.known.get(tool) if isinstance(tool, str) else tool
        if spec is None:
            return str(tool), "external", ""
        return spec.name, spec.effect, spec.path_of(args)

    def real(self, path: str) -> str | None:
        """The workspace-relative real path (symlinks resolved), None when it leaves the workspace."""
        if self.resolve is None:
            return relative(path, self.root)
        try:
            found = self.resolve(path)
        except Exception:  # a resolver failing on model input must not crash the loop
            return None
        return None if found is None else relative(str(found), self.root)

    def may_read(self, rel: str) -> bool:
        """False when a deny rule about a read tool (read_file, grep, ...) matches the workspace-relative path `rel`."""
        rel = relative(rel, self.root)
        return not any(r.verdict == "deny" and r.tool != "*" and any(map(r.names, self.read_tools))
                       and r.matches(rel) for r in self.rules)

    def explicitly_allows(self, tool: str, rel: str) -> bool:
        """Does a user allow rule `tool(glob)` match the workspace-relative path `rel`?"""
        rel = relative(rel, self.root)
        return any(r.matches(rel) for r in self.tool_rules(tool, "allow") if r.tool != "shell")

    def tool_rules(self, tool: str, verdict: str) -> list[Rule]:
        return [r for r in self.rules if r.verdict == verdict and r.names(tool)]

    # -- shell -------------------------------------------------------------------------------

    def check(self, command: str) -> Decision:
        """The decision for a shell command line. Never raises: what cannot be judged asks."""
        try:
            return self.judge(command)
        except Exception as exc:  # a bug here must fail closed, never crash the loop
            return self.fail_closed(command) or Decision(
                "ask", f"the checker failed on this command ({type(exc).__name__}); it needs approval",
                RULE_UNREADABLE)

    def judge(self, command: str) -> Decision:
        try:
            commands = parse(command)
        except Unparseable as exc:
            return self.fail_closed(command) or Decision(
                "ask", f"{exc}; a command that cannot be checked always needs approval", RULE_UNREADABLE)
        denied, floor = self.scan(commands)
        if denied:
            return denied
        dynamic = next((c for c in commands if c.dynamic or reads_piped_code(c)), None)
        if dynamic:
            return self.fail_closed(command) or Decision(
                "ask", f"what part of this command runs is only known at run time: "
                       f"{dynamic.dynamic or f'{dynamic.program} runs what it reads'}", RULE_DYNAMIC)
        if floor:
            return floor
        return self.by_mode(commands)

    def by_mode(self, commands: Sequence[Command]) -> Decision:
        """The decision once nothing built-in stands in the way: sandbox, code, mode, allow rules."""
        code = next((c.code for c in commands if c.code), "")
        if self.mode == "all" and self.sandbox != "unavailable" and (not code or self.sandbox == "sandboxed"):
            return Decision("allow", rule="mode all" + (" (inside the sandbox)" if code else ""))
        allowed = self.allowed(commands)
        if allowed:
            return Decision("allow", rule="; ".join(dict.fromkeys(r.describe() for r in allowed)))
        if self.mode == "all" and self.sandbox == "unavailable":
            return Decision("ask", f"the sandbox is not available ({self.sandbox_problem or 'it does not work here'}),"
                                   " so every shell command needs approval; --sandbox off runs commands"
                                   " unsandboxed", RULE_SANDBOX)
        if code:
            where = " and mode all allows it only inside the sandbox" if self.mode == "all" else ""
            return Decision("ask", f"{code}: no rule can check that code{where}", RULE_CODE)
        return Decision("ask", f"shell commands need approval in mode {self.mode}", f"mode {self.mode}")

    def scan(self, commands: Sequence[Command]) -> tuple[Decision | None, Decision | None]:
        """The first denial, and the first reason the command may not run unasked."""
        cwd: str | None = self.root
        floor = None
        for cmd in commands:  # no cap: the 61st command of a chain is checked like the first
            found = builtin(cmd, cwd, self.root, self.devices) or self.user_denial(cmd) or self.linked_disk(cmd, cwd)
            if found and found.verdict == "deny":
                return found, None
            floor = floor or found or protected_write(cmd, cwd, self.root) or self.outside_writes(cmd, cwd)
            cwd = next_cwd(cmd, cwd)
        return None, floor

    def user_denial(self, cmd: Command) -> Decision | None:
        texts = {cmd.text, cmd.full_text, " ".join([cmd.program, *cmd.words[1:]]), cmd.canon_text}
        for rule in self.tool_rules("shell", "deny"):
            if any(rule.matches(t) for t in texts):
                return Decision("deny", f"{cmd.text!r} matches a deny rule", rule.describe())
        return None

    def linked_disk(self, cmd: Command, cwd: str | None) -> Decision | None:
        """With no sandbox, a raw writer's target in the workspace that a link takes out of it may be a disk
        (an earlier call's `ln -s /dev/sda disk`, then `dd of=disk`): the real path decides."""
        if not self.devices or self.resolve is None or cmd.program not in RAW_WRITERS:
            return None
        for _, target in written(cmd):
            where = resolve(target, None if cmd.chdir else cwd)
            if where is not None and inside(where, self.root) and self.real(where) is None:
                return Decision("deny", f"{cmd.program} writes to {target}, a link out of the workspace: it may "
                                        "name a disk, and no sandbox hides the disks", RULE_DEVICE)
        return None

    def outside_writes(self, cmd: Command, cwd: str | None) -> Decision | None:
        for target in cmd.writes:
            if is_harmless_device(target):
                continue
            where = resolve(target, None if cmd.chdir else cwd)
            if where is None or not inside(where, self.root):
                return Decision("ask", f"writes to {target}, outside the workspace", RULE_OUTSIDE)
        return None

    def allowed(self, commands: Sequence[Command]) -> list[Rule]:
        """The allow rules that cover EVERY command, or [] when one is not covered."""
        used = []
        for cmd in commands:
            if cmd.sealed or not cmd.words:
                return []  # BASH_ENV=..., bash --rcfile: no rule of the inner command covers it
            if cmd.carrier:
                continue  # `bash -c '...'` is judged by the commands inside it
            if cmd.assigns:
                texts = [cmd.full_text]  # an assignment may change what the command does
            else:
                texts = [cmd.text, cmd.full_text] + ([] if cmd.widened else [cmd.canon_text])
            rule = next((r for r in self.tool_rules("shell", "allow") if any(map(r.matches, texts))), None)
            if rule is None:
                return []
            used.append(rule)
        return used

    def fail_closed(self, raw: str) -> Decision | None:
        """For text that could not be checked exactly: deny when it names a denied program anywhere."""
        return fail_closed(raw, self.tool_rules("shell", "deny"), self.root, self.devices)

    @property
    def devices(self) -> bool:
        """Can a command reach the host's disks? Not inside the sandbox: its /dev holds none."""
        return self.sandbox != "sandboxed"


class Settled(Protocol):
    """What `policy_for` reads of the settings (config.Settings has it): the approval mode in force."""

    approval: str


def policy_for(settings: Settled, rules: Iterable[Rule], workspace: Workspace, sandbox: Sandbox,
               tools: Iterable[ToolSpec] | None = None, floor: str = "all") -> Policy:
    """The policy of a run in `workspace`, built alike for every caller (a run, `loop policy check`), so the
    check answers what the run would: the same mode, rules, sandbox state and real paths (symlinks resolved)."""
    return Policy(settings.approval, rules, workspace.root, sandbox=sandbox.state, sandbox_problem=sandbox.problem or "",
                  resolve=workspace.real_rel, tools=tools, floor=floor)


def reads_piped_code(cmd: Command) -> bool:
    """`... | bash`, `bash < x.sh`: what runs arrives on stdin from elsewhere and cannot be checked."""
    return (bool(cmd.fed_by) or cmd.stdin == "file") and not cmd.carrier and runs_input(cmd.words)


def next_cwd(cmd: Command, cwd: str | None) -> str | None:
    """Follow `cd` so later relative paths resolve where bash would resolve them; None when unknown."""
    if cmd.program == "popd":
        return None
    if cmd.program not in ("cd", "pushd"):
        return cwd
    args = [a for a in cmd.words[1:] if not a.startswith("-")]
    if not args:
        return None if "-" in cmd.words[1:] or not cmd.words[1:] else cwd
    if 1 in cmd.unknown:
        return None
    return resolve(args[0], cwd)
