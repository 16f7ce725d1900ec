"""Loading a skill: `$NAME` in what the person typed, the load_skill tool (its enum, its `file`), each skill
once per conversation, and a project skill's files kept inside the workspace even when the model swaps in links."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopagent.messages import ToolCall, ToolResult, UserMessage
from loopagent.skills import SkillBook, discover
from loopagent.skills.book import loaded_in, loaded_in_session, mentioned
from loopagent.skills.tool import skill_tool
from loopagent.tools import Registry, ToolContext
from loopagent.tools.workspace import Workspace


def write_skill(root: Path, name: str, body: str = "Step one.\n", files: dict[str, str] | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} checklist.\n---\n{body}")
    for rel, text in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


@pytest.fixture
def book(tmp_path) -> SkillBook:
    ws = tmp_path / "ws"
    write_skill(ws / ".agents" / "skills", "release", "Tag, then build.\n",
                {"references/checklist.md": "1. tag\n", "scripts/tag.sh": "git tag\n", ".hidden": "x"})
    write_skill(tmp_path / "user" / ".agents" / "skills", "lint", "Run ruff.\n", {"rules.md": "USER-RULES\n"})
    return SkillBook(discover(ws, tmp_path / "home", tmp_path / "user"), ws)


def call(registry: Registry, ctx: ToolContext, args: dict, n: int = 0) -> ToolResult:
    tool_call = ToolCall(f"c{n}", "load_skill", json.dumps(args))
    prepared = registry.prepare(tool_call)
    return prepared if isinstance(prepared, ToolResult) else registry.run(prepared, ctx)


def test_dollar_names_are_the_known_skills_only():
    names = ["release", "db-migrate"]
    assert mentioned("do $release then $db-migrate, not $HOME or $releases or a$release", names) == \
        ["release", "db-migrate"]
    assert mentioned("$release, $release.", names) == ["release"]
    assert mentioned("cost: $5 and ${release}", names) == []


def test_a_dollar_name_loads_the_body_folder_and_files_once(book):
    blocks, notes = book.expand("ship it with $release", [])
    assert len(blocks) == 1 and notes == ["loaded skill release (.agents/skills/release)"]
    block = blocks[0]
    assert block.startswith('<skill name="release" folder=".agents/skills/release">')
    assert "Tag, then build." in block and "- references/checklist.md\n- scripts/tag.sh" in block
    assert ".hidden" not in block and "SKILL.md\n" not in block and "name: release" not in block
    history = [UserMessage("ship it with $release\n\n" + block)]
    assert loaded_in(history) == {"release"}
    assert book.expand("again $release", history) == ([], ["skill release is already loaded"])
    assert book.expand("again $release", []) == (blocks, notes)  # a cleared conversation loads it anew


def test_the_tool_offers_an_enum_and_a_misspelt_name_is_an_error_the_model_reads(book, tmp_path):
    tool = skill_tool(book, book.found.names)
    assert tool.spec().parameters["properties"]["name"]["enum"] == ["release", "lint"]
    registry, ctx = Registry([tool]), ToolContext(Workspace(book.workspace))
    wrong = call(registry, ctx, {"name": "relase"})
    assert wrong.is_error and "must be one of 'release', 'lint'" in wrong.content
    first = call(registry, ctx, {"name": "lint"}, 1)
    assert not first.is_error and "Run ruff." in first.content and "- rules.md" in first.content
    assert 'load_skill {"name": "lint", "file": PATH}' in first.content  # outside the workspace: read through the tool
    again = call(registry, ctx, {"name": "lint"}, 2)
    assert not again.is_error and "already loaded" in again.content and "Run ruff." not in again.content
    assert call(registry, ctx, {"name": "lint", "file": "rules.md"}, 3).content == "USER-RULES\n"


def test_file_reads_stay_inside_the_skill_folder(book, tmp_path):
    (tmp_path / "outside.txt").write_text("CANARY-OUTSIDE")
    registry, ctx = Registry([skill_tool(book, book.found.names)]), ToolContext(Workspace(book.workspace))
    for rel in ("../../../../outside.txt", str(tmp_path / "outside.txt"), "../release/SKILL.md"):
        result = call(registry, ctx, {"name": "lint", "file": rel})
        assert result.is_error and "CANARY" not in result.content, rel
    denied = ToolContext(Workspace(book.workspace), may_read=lambda rel: not rel.endswith("checklist.md"))
    result = call(registry, denied, {"name": "release", "file": "references/checklist.md"})
    assert result.is_error and "denied by a rule" in result.content


def test_a_project_skill_swapped_for_a_link_outside_is_not_loaded(book, tmp_path):
    # The model may write the workspace: a SKILL.md replaced by a link to a secret after discovery.
    secret = tmp_path / "id_rsa"
    secret.write_text("---\nname: release\ndescription: x\n---\nCANARY-PRIVATE-KEY\n")
    skill_md = book.workspace / ".agents" / "skills" / "release" / "SKILL.md"
    skill_md.unlink()
    skill_md.symlink_to(secret)
    registry, ctx = Registry([skill_tool(book, book.found.names)]), ToolContext(Workspace(book.workspace))
    result = call(registry, ctx, {"name": "release"})
    assert result.is_error and "links outside the workspace" in result.content and "CANARY" not in result.content
    (book.workspace / ".agents" / "skills" / "release" / "references" / "checklist.md").unlink()
    (book.workspace / ".agents" / "skills" / "release" / "references" / "checklist.md").symlink_to(secret)
    result = call(registry, ctx, {"name": "release", "file": "references/checklist.md"}, 1)
    assert result.is_error and "CANARY" not in result.content
    blocks, notes = book.expand("$release", [])
    assert blocks == [] and "could not be loaded" in notes[0]


def test_a_session_file_tells_which_skills_were_loaded():
    block = '<skill name="release" folder="x">\nbody\n</skill>'
    lines = [{"type": "header", "schema": 1},
             {"type": "message", "index": 0, "role": "user", "content": "go"},
             {"type": "message", "index": 1, "role": "tool", "call_id": "c", "name": "load_skill", "content": block},
             "torn {"]
    data = "\n".join(json.dumps(x) if isinstance(x, dict) else x for x in lines).encode()
    assert loaded_in_session(data) == {"release"}
    failed = [ToolResult("c", "load_skill", block, is_error=True)]
    assert loaded_in(failed) == set()
