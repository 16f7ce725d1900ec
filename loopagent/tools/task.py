"""`task`: hand a self-contained piece of work to a child agent with its own context window; its final answer
(and its session id) is the result. What a child is made of lives in run/child.py (`Children`): this module
is the tool the model sees, and it knows the child only through the `Spawner` it was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pydantic import BaseModel, Field

from loopagent.messages import ToolResult
from loopagent.tools.base import Tool, ToolContext
from loopagent.tools.spec import ToolSpec, default_subject
from loopagent.tools.task_agents import AgentDef


class Spawner(Protocol):
    agents: dict[str, AgentDef]

    def run(self, description: str, prompt: str, agent: str, ctx: ToolContext) -> ToolResult:
        """Run the child to its end (or the cancel token's); its answer as the result."""
        ...


class TaskParams(BaseModel):
    description: str = Field(min_length=1, max_length=200, description="a few words: what the child does")
    prompt: str = Field(min_length=1, description="the whole task for the child: it sees nothing of this "
                                                  "conversation, so say what to find or do and what to report")
    agent: str = Field("explore", description="which agent runs it")


class Task(Tool):
    name = "task"
    params = TaskParams
    effect = "delegate"

    def __init__(self, spawner: Spawner):
        self.spawner = spawner
        listed = "; ".join(f"{a.name}: {a.description[:200]}" for a in spawner.agents.values())
        self.description = (  # type: ignore[misc]
            "Run a child agent with a fresh context window on a self-contained task and get its final answer "
            "back. Use it to search or read widely without filling your own context. Calls of read-only agents "
            f"in one reply run in parallel. Agents: {listed}")

    def spec(self) -> ToolSpec:
        made = self.__dict__.get("_spec")
        if made is None:
            schema = self.params.model_json_schema()
            schema.pop("title", None)
            for prop in schema["properties"].values():
                prop.pop("title", None)
            schema["properties"]["agent"]["enum"] = list(self.spawner.agents)
            made = self.__dict__["_spec"] = ToolSpec(self.name, self.description, schema, read_only=self.read_only_for,
                                                     subject=subject, effect="delegate")
        return made

    def read_only_for(self, args: Mapping[str, Any]) -> bool:
        """Read-only children of one reply run together (the loop batches read-only calls)."""
        found = self.spawner.agents.get(str(args.get("agent") or "explore"))
        return found is not None and found.read_only

    def run(self, args: TaskParams, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        return self.spawner.run(args.description, args.prompt, args.agent, ctx)


def subject(args: Mapping[str, Any]) -> str:
    return f"{args.get('agent') or 'explore'}: {args.get('description') or default_subject(args)}"
