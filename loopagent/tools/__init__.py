"""Workspace tools and the registry that validates and runs them."""

from __future__ import annotations

from loopagent.tools.base import Tool, ToolContext, ToolError
from loopagent.tools.registry import Registry


def default_tools() -> list[Tool]:
    """The tools the model sees, in the order they are offered."""
    from loopagent.tools.files import EditFile, ReadFile, WriteFile
    from loopagent.tools.search import Grep, ListFiles
    from loopagent.tools.shell import Shell

    return [ReadFile(), ListFiles(), Grep(), WriteFile(), EditFile(), Shell()]


__all__ = ["Registry", "Tool", "ToolContext", "ToolError", "default_tools"]
