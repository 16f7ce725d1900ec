"""Workspace tools, their specs (tools as data), and the registry that validates and runs them."""

from __future__ import annotations

from functools import cache

from loopagent.errors import ToolError
from loopagent.tools.base import SchemaTool, Tool, ToolContext
from loopagent.tools.registry import Registry
from loopagent.tools.spec import Resource, ToolSpec


def default_tools() -> list[Tool]:
    """The tools the model sees, in the order they are offered."""
    from loopagent.tools.files import EditFile, ReadFile, WriteFile
    from loopagent.tools.search import Grep, ListFiles
    from loopagent.tools.shell import Shell
    from loopagent.tools.todo import TodoWrite

    return [ReadFile(), ListFiles(), Grep(), WriteFile(), EditFile(), Shell(), TodoWrite()]


@cache
def builtin_specs() -> tuple[ToolSpec, ...]:
    """The built-in tools as data: what a policy told no other tools knows of them."""
    return tuple(tool.spec() for tool in default_tools())


__all__ = ["Registry", "Resource", "SchemaTool", "Tool", "ToolContext", "ToolError", "ToolSpec", "builtin_specs", "default_tools"]
