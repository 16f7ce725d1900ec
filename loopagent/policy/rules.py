"""A user's allow and deny rules, and how one matches a command or a tool's subject."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

# `tool(glob)`: any tool name, MCP ones included (`mcp__github__delete_repo`, `github-mcp.delete_repo`).
TOOL_RULE = re.compile(r"([A-Za-z0-9_.*?-]+)\((.*)\)", re.S)
BUILTIN_TOOLS = frozenset({"read_file", "list_files", "grep", "write_file", "edit_file", "shell"})


@dataclass(frozen=True)
class Rule:
    """A user's allow or deny pattern: glob on a shell command, `tool(glob)` on a tool's path,
    or a bare tool name (`write_file`, `mcp__github__*`) for every call of that tool."""

    verdict: Literal["allow", "deny"]
    text: str  # as written in the config
    source: str = ""  # "user file /home/me/.loop/config.json line 4"

    @property
    def tool(self) -> str:
        """The tool (a glob over tool names) the rule is about; "shell" for a command pattern."""
        text = self.text.strip()
        m = TOOL_RULE.fullmatch(text)
        if m:
            return m.group(1)
        return text if is_tool_name(text) else "shell"

    @property
    def pattern(self) -> str:
        text = self.text.strip()
        m = TOOL_RULE.fullmatch(text)
        if m:
            return " ".join(m.group(2).split())
        return "*" if is_tool_name(text) else " ".join(text.split())

    def names(self, tool: str) -> bool:
        """Is this a rule about `tool`?"""
        return fnmatchcase(tool, self.tool)

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


def is_tool_name(text: str) -> bool:
    """A bare rule that names a tool rather than a shell command: a built-in tool or an MCP tool."""
    return text in BUILTIN_TOOLS - {"shell"} or text.startswith("mcp__")
