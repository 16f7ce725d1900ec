"""What a tool is: a name, a description for the model, a parameter model, a run function."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel

from loopagent.cancel import Cancel
from loopagent.messages import ToolResult
from loopagent.sandbox.executor import Executor, PlainExecutor

if TYPE_CHECKING:
    from loopagent.tools.workspace import Workspace


class ToolError(Exception):
    """An expected failure; its text becomes the error result the model reads."""


@dataclass
class ToolContext:
    """What tools may use besides their arguments. One per run; the loop gives each turn its own `cancel`."""

    workspace: Workspace
    # Environment for shell commands, already scrubbed of secrets by the caller.
    env: Mapping[str, str] = field(default_factory=dict)
    shell_timeout: float = 120.0
    # Set when the turn is cancelled: a tool that blocks watches it (polls, waits, or on_cancel()).
    cancel: Cancel = field(default_factory=Cancel)
    # How the shell starts a command: in the sandbox, or plainly (the default, `--sandbox off`).
    executor: Executor = field(default_factory=PlainExecutor)
    # Replaces known secret values in a result before it is shown, stored or sent (secrets.Redactor).
    redact: Callable[[str], str] = str
    # Path rules of the policy, on workspace-relative real paths (Policy.may_read, explicitly_allows):
    # grep and list_files skip what may not be read; a hard-linked file needs an explicit allow rule.
    may_read: Callable[[str], bool] = lambda rel: True
    explicitly_allows: Callable[[str, str], bool] = lambda tool, rel: False


class Tool:
    name: ClassVar[str]
    description: ClassVar[str]
    params: ClassVar[type[BaseModel]]
    read_only: ClassVar[bool] = False

    def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        raise NotImplementedError

    def subject(self, args: BaseModel) -> str:
        """What a person needs to see of a call: the path, the command, the pattern."""
        for key in ("path", "command", "pattern"):
            value = getattr(args, key, None)
            if value:
                return str(value)
        return ""

    def preview(self, args: BaseModel, ctx: ToolContext) -> str:
        """What an approval prompt shows before the call runs (the command, the diff to be made)."""
        return self.subject(args)

    def schema(self) -> dict:
        """The `{"type": "function", ...}` definition sent to the server."""
        params = self.params.model_json_schema()
        params.pop("title", None)
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }
