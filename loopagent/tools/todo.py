"""`todo_write`: the model's checklist, replaced whole on each call (DESIGN "Modes, plans and delegation").

The list lives in the result's details (a `todos` field), so the session file keeps it with the call,
the terminal and `--json` show it from the result, and compaction finds the latest one to send again.
Changing only loop's own memory, it counts as a read: it runs unasked in every mode, plan included.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from loopagent.details import Details, checklist
from loopagent.errors import ToolError
from loopagent.messages import ToolResult
from loopagent.tools.base import Tool, ToolContext

MAX_ITEMS = 100


class Todo(BaseModel):
    content: str = Field(min_length=1, max_length=500, description="what to do, as an imperative")
    status: Literal["pending", "in_progress", "completed"] = Field(description="at most one item in_progress")


class TodoParams(BaseModel):
    todos: list[Todo] = Field(max_length=MAX_ITEMS, description="the whole list; it replaces the previous one")


class TodoWrite(Tool):
    name = "todo_write"
    description = ("Keep a checklist of the steps of a multi-step task, shown to the user. Each call replaces the "
                   "whole list. Mark one item in_progress while you work on it and completed when done.")
    params = TodoParams
    effect = "read"

    def run(self, args: TodoParams, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        busy = [t.content for t in args.todos if t.status == "in_progress"]
        if len(busy) > 1:
            raise ToolError(f"at most one item may be in_progress, not {len(busy)} ({', '.join(busy)}); "
                            "the list was not changed: send it again with one in_progress")
        todos = tuple((t.content, t.status) for t in args.todos)
        done = sum(status == "completed" for _, status in todos)
        return ToolResult.ok(f"todo list updated ({done}/{len(todos)} done):\n{checklist(todos)}",
                             details=Details(todos=todos))
