"""A user's allow and deny rules, and how one matches a command or a tool's subject."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from loopagent.errors import PolicyError  # a usage error: one line on stderr, exit 2

# `tool(glob)`: any tool name, MCP ones included (`mcp__github__delete_repo`). Tool names are
# [A-Za-z0-9_-]; a dot is read here too, so that `github-mcp.delete_repo(*)` is a tool rule (and then an
# error, since no tool is named so) rather than a shell pattern that quietly matches nothing.
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

    def check(self, known_tools: Iterable[str], prefixes: Iterable[str] = ()) -> None:
        """PolicyError when this is a rule about a tool that does not exist.

        `known_tools` are the names of every tool of the run (built-in and MCP); `prefixes` let rules
        about the tools of a configured MCP server (`mcp__github__`) pass before its tools are listed.
        """
        tool = self.tool
        if tool == "shell" or any(fnmatchcase(name, tool) for name in known_tools):
            return
        if any(tool.startswith(p) or fnmatchcase(p + "x", tool) for p in prefixes):
            return
        hint = (" (tool names have no dots; an MCP tool is named mcp__<server>__<tool>)" if "." in tool
                else "; a shell command pattern has no parentheses" if TOOL_RULE.fullmatch(self.text.strip()) else "")
        raise PolicyError(f"{self.describe()}: no tool is named {tool!r}{hint}")

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


def check_rules(rules: Iterable[Rule], known_tools: Iterable[str], prefixes: Iterable[str] = ()) -> None:
    """PolicyError for the first rule that names a tool that does not exist (see Rule.check)."""
    known, prefixes = tuple(known_tools), tuple(prefixes)
    for rule in rules:
        rule.check(known, prefixes)


def is_tool_name(text: str) -> bool:
    """A bare rule that names a tool rather than a shell command: a built-in tool or an MCP tool."""
    return text in BUILTIN_TOOLS - {"shell"} or text.startswith("mcp__")
