"""A prompt's content blocks as the user message loop sends, and the slash commands an editor offers.

Text is taken as typed; a resource link becomes `@path` (relative inside the workspace), which is then
attached as the REPL attaches a mention (session.py); an embedded resource's text is attached below the
message with its URI. The commands are the prompt templates (compose/templates.py), the few
REPL commands that make sense beside an editor (checkpoints and undo), and `skill:NAME` for each skill (as the
REPL's `/skill:NAME`: the skill is loaded before the model is asked).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp import schema

# name -> help; each is run by session.py, never sent to the model
COMMANDS = {
    "undo": "restore the files to the latest checkpoint",
    "redo": "reverse the last undo",
    "checkpoints": "list checkpoints, newest first",
    "diff": "the change to the files since the session started",
    "compact": "summarise older turns now: /compact [focus]",
}
SKILL = "skill:"  # `/skill:NAME text` is sent as `$NAME text` (skills/book.py loads what `$NAME` names)


def local_path(uri: str) -> str | None:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else None


def shown(uri: str, root: str) -> str:
    """A file URI inside the workspace as its relative path, anything else as given."""
    path = local_path(uri)
    if path is None:
        return uri
    rel = os.path.relpath(path, root)
    return path if rel == ".." or rel.startswith("../") else rel


def prompt_text(blocks: list[Any], root: str) -> str:
    """The user message for a prompt's blocks."""
    text, attached = prompt_parts(blocks, root)
    return "\n\n".join([text, *attached]) if attached else text


def prompt_parts(blocks: list[Any], root: str) -> tuple[str, list[str]]:
    """What the person typed (text, and resource links as `@path`), and the embedded resources' blocks: only
    the typed part is read for `$NAME` skills, as at the REPL (a file's text names none on its own)."""
    parts: list[str] = []
    attached: list[str] = []
    for block in blocks:
        if isinstance(block, schema.TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, schema.ResourceContentBlock):
            parts.append(f"@{shown(block.uri, root)}")
        elif isinstance(block, schema.EmbeddedResourceContentBlock):
            resource = block.resource
            name = shown(resource.uri, root)
            if isinstance(resource, schema.TextResourceContents):
                attached.append(f"<context uri=\"{name}\">\n{resource.text}\n</context>")
            else:
                attached.append(f"({name}: binary content, not attached)")
        else:
            parts.append(f"({getattr(block, 'type', 'content')} not supported: not attached)")
    return " ".join(p for p in parts if p), attached


def slash(text: str) -> tuple[str, str] | None:
    """`/name args` as (name, args); None for anything else."""
    if not text.startswith("/") or text.startswith("//"):
        return None
    name, _, args = text[1:].partition(" ")
    return (name, args.strip()) if name and "/" not in name else None


def templates_of(home: Path, workspace: Path) -> dict[str, Any]:
    """The person's prompt templates by name (without the slash), none taking a command's name."""
    from loopagent.compose.templates import templates

    found = templates(home, workspace, {f"/{name}" for name in COMMANDS})
    return {name.removeprefix("/"): t for name, t in found.items()}


def skill_text(name: str, args: str, skills: dict[str, str]) -> str | None:
    """The message `/skill:NAME args` stands for, or None when `name` is no `skill:` command; "" for an
    unknown skill (nothing is sent)."""
    if not name.startswith(SKILL):
        return None
    skill = name[len(SKILL):]
    return f"${skill} {args}".strip() if skill in skills else ""


def available(home: Path, workspace: Path, skills: dict[str, str] | None = None) -> schema.AvailableCommandsUpdate:
    """The commands an editor offers after `/`; `skills`: name -> description."""
    commands = [schema.AvailableCommand(name=name, description=help_,
                                        input=schema.AvailableCommandInput(root=schema.UnstructuredCommandInput(
                                            hint="focus")) if name == "compact" else None)
                for name, help_ in COMMANDS.items()]
    for name, template in templates_of(home, workspace).items():
        commands.append(schema.AvailableCommand(
            name=name, description=template.help,
            input=schema.AvailableCommandInput(root=schema.UnstructuredCommandInput(hint="arguments"))))
    for name, description in (skills or {}).items():
        commands.append(schema.AvailableCommand(
            name=f"{SKILL}{name}", description=f"skill: {description}",
            input=schema.AvailableCommandInput(root=schema.UnstructuredCommandInput(hint="what to do with it"))))
    return schema.AvailableCommandsUpdate(session_update="available_commands_update", available_commands=commands)
