"""`load_skill {name, file?}`: the model loads a skill the catalog lists. Its name is an enum of those skills,
so even a small model cannot misspell one; a skill already loaded is not sent twice. It lives with the skills
(which import tools/ for its base), so tools/ knows nothing of skills."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loopagent.errors import ToolError
from loopagent.messages import ToolResult
from loopagent.skills.book import TOOL, SkillBook, block, read_file_of
from loopagent.tools.base import SchemaTool, ToolContext
from loopagent.tools.spec import ToolSpec

DESCRIPTION = ("Load a skill from the Skills list of the system prompt: its instructions, its folder and its "
               "files. Load the matching skill before you start a task it describes, then follow it. "
               "`file` reads one of the skill's files instead (for a skill whose folder is outside the workspace).")


def skill_tool(book: SkillBook, names: Sequence[str]) -> SchemaTool:
    """The load_skill tool over `book`, offering `names` (the skills the catalog lists)."""
    parameters = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "enum": list(names), "description": "the skill's name, as listed"},
            "file": {"type": "string", "description": "optional: a file of the skill's folder, relative to it"},
        },
        "required": ["name"],
        "additionalProperties": False,
    }
    spec = ToolSpec(TOOL, DESCRIPTION, parameters, subject=lambda args: str(args.get("name", "")), effect="read")

    def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        skill = book.found.get(str(args["name"]))
        if skill is None:  # the enum keeps this out; a book changed under the spec must not crash
            raise ToolError(f"no skill named {args['name']!r}")
        rel = args.get("file")
        if rel:
            where = skill.folder / str(rel)
            if skill.origin == "project" and not ctx.may_read(where.relative_to(book.workspace).as_posix()):
                raise ToolError(f"reading {rel} of the skill {skill.name} is denied by a rule")
            try:
                return ToolResult.ok(read_file_of(skill, str(rel)), display=f"{skill.name}/{rel}")
            except OSError as exc:
                raise ToolError(str(exc)) from None
        if skill.name in book.loaded:
            return ToolResult.ok(f"The skill {skill.name} is already loaded in this conversation (above); follow it.",
                                 display="already loaded")
        try:
            text = block(skill, book.workspace)
        except OSError as exc:
            raise ToolError(f"the skill {skill.name} cannot be read: {exc}") from None
        book.loaded.add(skill.name)
        return ToolResult.ok(text, display=f"loaded skill {skill.name}")

    return SchemaTool(spec, run)
