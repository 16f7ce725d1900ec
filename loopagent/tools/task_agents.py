"""The agents a `task` call may start: the built-in `explore` and `general`, and the user's and the project's
Markdown files (`$LOOP_HOME/agents/NAME.md`, `<workspace>/.loop/agents/NAME.md`).

An agent file is front matter (`name`, `description`, `tools`: a comma-separated string or a list,
`max_steps`) and a body of instructions. The user's agents are the user's word; a project's arrive with a
repository that may be hostile, so a project agent can only narrow: it never runs in a looser mode than its
parent, never gets a tool the agent it shadows (or the parent) lacks, and never more steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

MAX_FILE_BYTES = 64 * 1024
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


@dataclass(frozen=True)
class AgentDef:
    """One agent: which tools it gets (None: the parent's), whether it is read-only, its step cap, its text."""

    name: str
    description: str
    tools: tuple[str, ...] | None = None
    read_only: bool = False  # explore: read tools and a read-only sandboxed shell (approval mode plan)
    max_steps: int | None = None
    body: str = ""
    source: str = "built-in"  # built-in | user | project


EXPLORE = AgentDef("explore", "Read-only research: searches and reads the workspace and runs read-only commands, "
                              "then reports what it found. The default.", read_only=True)
GENERAL = AgentDef("general", "A general agent with your tools and approval mode, for a self-contained subtask.")
BUILT_IN = {a.name: a for a in (EXPLORE, GENERAL)}


def load_agents(home: Path | None, workspace: Path | None) -> tuple[dict[str, AgentDef], list[str]]:
    """Every agent by name, and one warning for each file that could not be used."""
    agents, warnings = dict(BUILT_IN), []
    for where, source in ((home / "agents" if home else None, "user"),
                          (workspace / ".loop" / "agents" if workspace else None, "project")):
        if where is None or not where.is_dir():
            continue
        for path in sorted(where.glob("*.md")):
            try:
                found = parse_agent(path, source)
            except ValueError as exc:
                warnings.append(f"agent {path}: {exc}")
                continue
            agents[found.name] = narrowed(found, agents.get(found.name)) if source == "project" else found
    return agents, warnings


def narrowed(agent: AgentDef, shadowed: AgentDef | None) -> AgentDef:
    """A project agent, no wider than the agent of the same name it shadows."""
    if shadowed is None:
        return agent
    tools = agent.tools
    if shadowed.tools is not None:
        tools = tuple(t for t in (tools if tools is not None else shadowed.tools) if t in shadowed.tools)
    steps = min(filter(None, (agent.max_steps, shadowed.max_steps)), default=None)
    return replace(agent, tools=tools, max_steps=steps, read_only=agent.read_only or shadowed.read_only)


def parse_agent(path: Path, source: str) -> AgentDef:
    """An agent file; raises ValueError naming what is wrong."""
    try:
        raw = path.read_bytes()[:MAX_FILE_BYTES].decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read it ({exc})") from None
    fields, body = front_matter(raw)
    given = fields.get("name")
    name = (given if isinstance(given, str) and given else path.stem).strip()
    if not NAME.fullmatch(name):
        raise ValueError(f"name {name!r} must be lower-case letters, digits, - or _")
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        raise ValueError("front matter needs a description")
    tools = fields.get("tools")
    if isinstance(tools, str):
        tools = [t.strip() for t in tools.split(",") if t.strip()]
    steps = fields.get("max_steps")
    if steps is not None and not (isinstance(steps, str) and steps.isdigit() and int(steps) > 0):
        raise ValueError(f"max_steps must be a whole number above 0, not {steps!r}")
    return AgentDef(name, description.strip(), tuple(tools) if tools is not None else None,
                    max_steps=int(steps) if steps else None, body=body.strip(), source=source)


def front_matter(text: str) -> tuple[dict[str, str | list[str]], str]:
    """`---` key: value lines (a value may be a `[a, b]` list or `- item` lines) `---`, then the body."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ValueError("it must start with front matter between --- lines")
    fields: dict[str, str | list[str]] = {}
    key = ""
    for i, line in enumerate(lines[1:], 1):
        if line.strip() == "---":
            return fields, "\n".join(lines[i + 1:])
        item = re.fullmatch(r"\s+-\s*(.+)", line)
        if item and key:
            listed = fields.get(key)
            fields[key] = [*(listed if isinstance(listed, list) else []), unquote(item.group(1))]
            continue
        m = re.fullmatch(r"([A-Za-z_][\w-]*)\s*:\s*(.*)", line)
        if not m:
            if line.strip() and not line.lstrip().startswith("#"):
                raise ValueError(f"line {i + 1} of the front matter is not `key: value`")
            continue
        key, value = m.group(1), m.group(2).strip()
        if value.startswith("[") and value.endswith("]"):
            fields[key] = [unquote(v) for v in value[1:-1].split(",") if v.strip()]
        else:
            fields[key] = unquote(value) if value else []
    raise ValueError("the front matter has no closing --- line")


def unquote(value: str) -> str:
    value = value.strip()
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"" else value
