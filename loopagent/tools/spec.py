"""A tool as data: what the model is offered and what the policy and the context need to know of a
call. Built-in tools and schema-only tools (MCP) both produce a ToolSpec; the model adapters
(client/openai.py) translate it into their wire form.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

# What chat-completions servers accept as a function name (OpenAI's rule; llama.cpp and vLLM agree).
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# What a tool does, which is what the policy judges it by (its name never is):
#   read      only reads the workspace: runs unasked and alongside other reads; a deny rule about any
#             read tool's path keeps every read tool away from that path
#   edit      changes files in the workspace: runs unasked in approval mode `edits`
#   exec      runs its `command` argument as a shell command line: the shell checker judges that line
#   external  acts outside the workspace (an MCP server's tool): asked unless mode `all` or an allow rule
#   delegate  runs a child agent (`task`) whose every call the policy judges in turn: runs unasked
Effect = Literal["read", "edit", "exec", "external", "delegate"]
EFFECTS: tuple[Effect, ...] = ("read", "edit", "exec", "external", "delegate")
COMMAND = "command"  # the argument an exec tool runs
SUBJECT_KEYS = ("path", "command", "pattern", "query", "url", "name")


@dataclass(frozen=True)
class Resource:
    """What one call reads, writes or runs, so the context can tell when a later call supersedes it.

    `key` is the workspace-relative path (read, write) or the command line (run); `lines` is the
    span of lines a read covers, [first, end) with end None for "to the end".
    """

    access: Literal["read", "write", "run"]
    key: str
    lines: tuple[int, int | None] | None = None


def default_subject(args: Mapping[str, Any]) -> str:
    """What a person needs to see of a call: its path, command or pattern (the first string one)."""
    for key in SUBJECT_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def no_resource(args: Mapping[str, Any]) -> Resource | None:
    """For tools whose calls no later call can supersede."""
    return None


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the model sees it (name, description, JSON schema of its arguments) and as the loop
    judges a call of it (what it does, its path argument, read-only or not, its subject, the resource it
    touches).

    `effect` says what the tool does (see EFFECTS above); `path_param` names the argument that holds the
    workspace path a call touches (None: the tool has none), which path rules like `read_file(.env)` match.
    `read_only` defaults to what the effect says (True for `read`); a per-call predicate may narrow it.

    The callables take the validated arguments as a JSON object (a dict) and must not raise; use
    `read_only_for`, `subject_of`, `resource_of`, which fail closed when they do.
    """

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    read_only: bool | Callable[[Mapping[str, Any]], bool] | None = None
    subject: Callable[[Mapping[str, Any]], str] = default_subject
    resource: Callable[[Mapping[str, Any]], Resource | None] = no_resource
    effect: Effect = "external"
    path_param: str | None = None

    def __post_init__(self) -> None:
        if not NAME.fullmatch(self.name):
            raise ValueError(f"tool name {self.name!r} must be 1-64 characters of A-Z a-z 0-9 _ -")
        if self.effect not in EFFECTS:
            raise ValueError(f"tool {self.name}: effect must be one of {', '.join(EFFECTS)}, not {self.effect!r}")
        if self.read_only is None:
            object.__setattr__(self, "read_only", self.effect == "read")
        if not isinstance(self.parameters, Mapping) or self.parameters.get("type", "object") != "object":
            raise ValueError(f"tool {self.name}: parameters must be a JSON schema of type object")

    def read_only_for(self, args: Mapping[str, Any]) -> bool:
        """Whether this call only reads; a predicate that fails says no (the call then needs the policy)."""
        if not callable(self.read_only):
            return bool(self.read_only)
        try:
            return bool(self.read_only(args))
        except Exception:  # a predicate's bug on model input must not make a call read-only
            return False

    def subject_of(self, args: Mapping[str, Any]) -> str:
        """What a person needs to see of this call ("" when it cannot be said)."""
        try:
            return str(self.subject(args) or "")
        except Exception:
            return ""

    def resource_of(self, args: Mapping[str, Any]) -> Resource | None:
        """The resource this call touches, None when unknown."""
        try:
            return self.resource(args)
        except Exception:
            return None

    def path_of(self, args: Mapping[str, Any]) -> str:
        """The workspace path this call names in its path argument ("" when it names none)."""
        value = args.get(self.path_param) if self.path_param else None
        return value if isinstance(value, str) else ""
