"""The skills of one run and which of them the conversation has loaded.

A skill is loaded two ways, both into the conversation itself, so the session file records it and
`--resume` and `--fork` keep it: the model calls `load_skill` (a tool result), or the person writes
`$NAME` (the skill's block follows their message, loaded before the model is asked). Either way the
same `<skill ...>` block is sent, and a skill already in the conversation is not loaded again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loopagent.messages import Message, ToolResult, UserMessage
from loopagent.skills.discovery import Found
from loopagent.skills.parse import Skill, body_of, read_head

TOOL = "load_skill"
MAX_BODY_CHARS = 20_000  # what of a SKILL.md the model gets (the format asks for under 5,000 tokens)
MAX_FILE_CHARS = 60_000
MAX_FILES = 100  # a skill folder's files listed with its body
MENTION = re.compile(r"(?<![\w$])\$([^\W_](?:[^\W_]|-(?=[^\W_]))*)")  # $name: letters, digits, inner hyphens
BLOCK = re.compile(r'<skill name="([^"]+)"')


def block(skill: Skill, workspace: Path) -> str:
    """What loading `skill` sends: its folder, its files and its instructions. Raises OSError when its
    SKILL.md cannot be read."""
    from loopagent.clip import clip

    body = body_of(skill)
    if len(body) > MAX_BODY_CHARS:
        body = clip(body, MAX_BODY_CHARS // 2, MAX_BODY_CHARS // 2, note=f"read {skill.file.name} for them")
    where = folder_label(skill, workspace)
    files = files_of(skill)
    if skill.origin == "project":
        how = f"Read a file below with read_file at {where}/PATH when these instructions call for it."
    else:
        how = (f'The folder is outside the workspace: read a file below with load_skill {{"name": "{skill.name}", '
               '"file": PATH} when these instructions call for it.')
    listing = "\n".join(f"- {f}" for f in files) if files else "(none besides SKILL.md)"
    return (f'<skill name="{skill.name}" folder="{where}">\n{how}\nFiles:\n{listing}\n\n{body}\n</skill>')


def folder_label(skill: Skill, workspace: Path) -> str:
    """The folder as the model should name it: relative to the workspace for a project skill."""
    if skill.origin == "project":
        try:
            return skill.folder.relative_to(workspace).as_posix()
        except ValueError:
            pass
    return str(skill.folder)


def files_of(skill: Skill) -> list[str]:
    """The files in a skill's folder besides SKILL.md, relative, sorted; hidden ones and links left out."""
    out: list[str] = []
    for top, dirs, names in os.walk(skill.folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel = Path(top).relative_to(skill.folder)
        for name in sorted(names):
            path = Path(top) / name
            if name.startswith(".") or (rel == Path(".") and path == skill.file) or path.is_symlink():
                continue
            out.append((rel / name).as_posix())
            if len(out) >= MAX_FILES:
                return [*out, f"... (more than {MAX_FILES} files)"]
    return out


def read_file_of(skill: Skill, rel: str) -> str:
    """A file of the skill's folder (for a skill outside the workspace); raises OSError when it is outside
    that folder, is not a regular file, or cannot be read."""
    folder = Path(os.path.realpath(skill.folder))
    real = Path(os.path.realpath(folder / rel))
    if folder not in real.parents or (skill.inside is not None and skill.inside not in real.parents):
        raise OSError(f"{rel!r} is not a file of the skill {skill.name!r}")
    head = read_head(real, MAX_FILE_CHARS * 4)
    if isinstance(head, str):
        raise OSError(f"{rel} {head}")
    text = head.decode("utf-8", errors="replace")
    return text if len(text) <= MAX_FILE_CHARS else text[:MAX_FILE_CHARS] + "\n[... the rest is not shown]"


def loaded_in(history: Sequence[Message]) -> set[str]:
    """The skills a conversation has loaded: load_skill results and skill blocks in user messages."""
    out: set[str] = set()
    for msg in history:
        if isinstance(msg, ToolResult) and msg.name == TOOL and not msg.is_error:
            if hit := BLOCK.match(msg.content):
                out.add(hit.group(1))
        elif isinstance(msg, UserMessage) and '<skill name="' in msg.content:
            out.update(BLOCK.findall(msg.content))
    return out


def loaded_in_session(data: bytes) -> set[str]:
    """The skills a session file's conversation loaded (what `loop eval` reports for a task's `expect_skill`);
    a line that is no message, or is torn, is passed over."""
    import json

    from loopagent.messages import from_record

    history: list[Message] = []
    for line in data.splitlines():
        try:
            record = json.loads(line)
            if isinstance(record, dict) and record.get("type") == "message":
                history.append(from_record(record))
        except (ValueError, KeyError, TypeError):
            continue
    return loaded_in(history)


def mentioned(text: str, names: Sequence[str]) -> list[str]:
    """The skills `text` names as `$NAME`, in order, once each; a `$WORD` that names no skill is text."""
    known = set(names)
    return list(dict.fromkeys(n for n in MENTION.findall(text) if n in known))


@dataclass
class SkillBook:
    """The skills found for a run, and the names the conversation has loaded so far."""

    found: Found
    workspace: Path
    loaded: set[str] = field(default_factory=set)

    def seen(self, history: Sequence[Message]) -> None:
        """Take the skills `history` has loaded as loaded (a resumed or forked session's)."""
        self.loaded = loaded_in(history)

    def __call__(self, text: str, history: Sequence[Message]) -> tuple[list[str], list[str]]:
        """The book as the agent's `Steering.skills`: see `expand`."""
        return self.expand(text, history)

    def expand(self, text: str, history: Sequence[Message]) -> tuple[list[str], list[str]]:
        """The block of each skill `text` names as `$NAME`, unless already loaded, and a line for the person
        about each. `history` (the conversation so far) says what is loaded."""
        self.seen(history)
        blocks, notes = [], []
        for name in mentioned(text, self.found.names):
            skill = self.found.get(name)
            assert skill is not None
            if name in self.loaded:
                notes.append(f"skill {name} is already loaded")
                continue
            try:
                blocks.append(block(skill, self.workspace))
            except OSError as exc:
                notes.append(f"skill {name} could not be loaded: {exc}")
                continue
            self.loaded.add(name)
            notes.append(f"loaded skill {name} ({folder_label(skill, self.workspace)})")
        return blocks, notes
