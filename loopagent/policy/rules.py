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
# error, since no tool can be named so) rather than a shell pattern that quietly matches nothing.
TOOL_RULE = re.compile(r"([A-Za-z0-9_.*?-]+)\((.*)\)", re.S)
# What a tool name (or a glob over them) is made of: MCP names are mcp__<server>__<tool> of these.
TOOL_NAME = re.compile(r"[A-Za-z0-9_*?-]+")
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

    def check(self) -> None:
        """PolicyError when the rule cannot name any tool (a name with a dot or other character no tool
        name has). Only the shape is checked: the tools of the moment (an MCP server that did not start,
        a tool of a later version) never make a rule an error; `unmatched` finds those for a note."""
        tool = self.tool
        if tool == "shell" or TOOL_NAME.fullmatch(tool):
            return
        hint = (" (tool names have no dots; an MCP tool is named mcp__<server>__<tool>)" if "." in tool
                else "; a shell command pattern has no parentheses" if TOOL_RULE.fullmatch(self.text.strip()) else "")
        raise PolicyError(f"{self.describe()}: no tool can be named {tool!r}{hint}")

    def unmatched(self, known_tools: Iterable[str], prefixes: Iterable[str] = ()) -> bool:
        """Does this tool rule name none of `known_tools` and no tool of a server with one of `prefixes`?"""
        tool = self.tool
        if tool == "shell" or any(fnmatchcase(name, tool) for name in known_tools):
            return False
        return not any(tool.startswith(p) or fnmatchcase(p + "x", tool) for p in prefixes)

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


def check_rules(rules: Iterable[Rule]) -> None:
    """PolicyError for the first rule whose shape names no possible tool (see Rule.check)."""
    for rule in rules:
        rule.check()


def unmatched_rules(rules: Iterable[Rule], known_tools: Iterable[str], prefixes: Iterable[str] = ()) -> list[Rule]:
    """The tool rules that match none of `known_tools` nor a configured server's `prefixes` (for a note)."""
    known, prefixes = tuple(known_tools), tuple(prefixes)
    return [r for r in rules if r.unmatched(known, prefixes)]


def is_tool_name(text: str) -> bool:
    """A bare rule that names a tool rather than a shell command: a built-in tool or an MCP tool."""
    return text in BUILTIN_TOOLS - {"shell"} or text.startswith("mcp__")
