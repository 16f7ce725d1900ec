"""What a tool is: a spec (name, description, JSON schema), a way to validate a call's arguments, a run function."""

from __future__ import annotations

import copy
import functools
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, RootModel, ValidationError

from loopagent.cancel import Cancel
from loopagent.messages import ToolResult
from loopagent.sandbox.executor import Executor, PlainExecutor
from loopagent.tools.schema import problems
from loopagent.tools.spec import Effect, Resource, ToolSpec, default_subject

if TYPE_CHECKING:
    from loopagent.tools.workspace import Workspace


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
    # What the run has left when a turn's calls start (the loop sets them): a `task` child's limits.
    steps_left: int | None = None
    tokens_left: int | None = None
    approver: Any = None  # the run's approver (the REPL's pauses its type-ahead), for a child's questions
    # Tells the user something went wrong beside the result (a Notice("warning") once the agent is built).
    warn: Callable[[str], None] = lambda text: print(f"loop: warning: {text}", file=sys.stderr, flush=True)
    # After a write or an edit: what the language server found new in the file (loopagent/lsp/, a
    # block of text, "" for nothing); None when diagnostics are off (tools/edit_result.py).
    diagnose: Callable[[Any, ToolContext], str] | None = None
    # The model's id of the call the tool runs for (Registry.run sets it): a task child's progress names it.
    call_id: str = ""


class InvalidArguments(Exception):
    """Arguments that do not match the tool's schema; `problems` are `where: what` lines for the model."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


class Arguments(RootModel[dict[str, Any]]):
    """The arguments of a schema-only tool's call once they passed its JSON schema (a JSON object)."""


class Tool:
    """A built-in tool: a pydantic parameter model, a run function. `spec()` is what the model is offered.

    A tool without a pydantic model (an MCP tool) is a SchemaTool: its spec carries the JSON schema.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    params: ClassVar[type[BaseModel]]
    # What it does and which argument is its workspace path (see ToolSpec): the policy reads these, never the name.
    effect: ClassVar[Effect] = "external"
    path_param: ClassVar[str | None] = None

    def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        raise NotImplementedError

    def spec(self) -> ToolSpec:
        """The neutral description of this tool (built once per tool)."""
        made = self.__dict__.get("_spec")
        if made is None:
            made = self.__dict__["_spec"] = ToolSpec(self.name, self.description, parameters_of(self.params),
                                                     subject=default_subject, resource=self.resource,
                                                     effect=self.effect, path_param=self.path_param)
        return made

    @property
    def read_only(self) -> bool:
        """For callers that ask the tool rather than the call: a per-call predicate counts as "not read-only"."""
        return self.spec().read_only is True

    def validate(self, raw: dict[str, Any]) -> BaseModel:
        """The call's arguments as this tool runs them; InvalidArguments when they do not fit its schema."""
        try:
            return self.params.model_validate(raw)
        except ValidationError as exc:
            raise InvalidArguments([f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                                    for e in exc.errors()]) from None

    def resource(self, args: Mapping[str, Any]) -> Resource | None:
        """What a call reads, writes or runs (for the context's stubs); None: nothing a later call supersedes."""
        return None

    def subject(self, args: BaseModel) -> str:
        """What a person needs to see of a call: the path, the command, the pattern."""
        return self.spec().subject_of(args.model_dump())

    def preview(self, args: BaseModel, ctx: ToolContext) -> str:
        """What an approval prompt shows before the call runs (the command, the diff to be made)."""
        return self.subject(args)


class SchemaTool(Tool):
    """A tool known only by its spec (a JSON schema, no pydantic class): an MCP tool, a test's tool.

    `run` gets the validated arguments as a dict; it may raise ToolError like any tool.
    """

    def __init__(self, spec: ToolSpec, run: Callable[[dict[str, Any], ToolContext], ToolResult]):
        self._spec, self._run = spec, run
        self.name, self.description = spec.name, spec.description  # type: ignore[misc]
        self.effect, self.path_param = spec.effect, spec.path_param  # type: ignore[misc]

    def spec(self) -> ToolSpec:
        return self._spec

    def validate(self, raw: dict[str, Any]) -> Arguments:
        found = problems(raw, self._spec.parameters)
        if found:
            raise InvalidArguments(found)
        return Arguments(raw)

    def resource(self, args: Mapping[str, Any]) -> Resource | None:
        return self._spec.resource_of(args)

    def run(self, args: Arguments, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        return self._run(args.root, ctx)


def parameters_of(params: type[BaseModel]) -> dict[str, Any]:
    """A pydantic model's JSON schema as tools are offered it: without pydantic's titles (a copy: a process
    that builds many runs, an eval worker or a parent with children, makes each model's schema once)."""
    return copy.deepcopy(_schema_of(params))


@functools.cache
def _schema_of(params: type[BaseModel]) -> dict[str, Any]:
    schema = params.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema
