"""SKILL.md parsing, checked against the format's reference library (skills-ref) on the same fixture skills.

loop agrees with skills-ref on every valid and invalid skill, except where it is lenient on purpose (a colon
in an unquoted value, fields the format does not name): those differences are listed and pinned too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import skills_ref
from hypothesis import given, settings
from hypothesis import strategies as st

from loopagent.skills import Invalid, Skill, discover
from loopagent.skills.parse import front_matter, plain_mapping, read_skill

LONG_DESCRIPTION = "x" * 1025
# folder -> SKILL.md text; the folder's name is the skill's (the format requires them equal)
VALID = {
    "pdf-tools": "---\nname: pdf-tools\ndescription: Fill and merge PDF forms.\n---\n# PDF\nUse pypdf.\n",
    "data-export": ("---\nname: data-export\ndescription: Export tables as CSV.\nlicense: MIT\ncompatibility: needs "
                    "python3\nallowed-tools: Bash(git:*) Read\nmetadata:\n  author: team\n  version: \"1.0\"\n---\nBody\n"),
    "quoted": "---\nname: \"quoted\"\ndescription: 'Has: a colon, quoted'\n---\n",
    "folded": "---\nname: folded\ndescription: >-\n  Line one\n  and line two.\n---\nBody\n",
    "crlf-file": "---\r\nname: crlf-file\r\ndescription: Written on Windows.\r\n---\r\nBody\r\n",
    "données": "---\nname: données\ndescription: Unicode letters are letters.\n---\n",
    "v2": "---\nname: v2\ndescription: 123\n---\n",  # a number is still a string here (base loader, strictyaml)
    "a" * 64: f"---\nname: {'a' * 64}\ndescription: The longest name.\n---\n",
}
INVALID = {
    "Upper-Name": "---\nname: Upper-Name\ndescription: Capitals.\n---\n",
    "other-dir": "---\nname: some-name\ndescription: Not its folder's name.\n---\n",
    "a--b": "---\nname: a--b\ndescription: Two hyphens.\n---\n",
    "-lead": "---\nname: -lead\ndescription: A leading hyphen.\n---\n",
    "snake_case": "---\nname: snake_case\ndescription: An underscore.\n---\n",
    "no-desc": "---\nname: no-desc\n---\nBody\n",
    "empty-desc": "---\nname: empty-desc\ndescription: \"\"\n---\n",
    "no-name": "---\ndescription: Nameless.\n---\n",
    "long-desc": f"---\nname: long-desc\ndescription: {LONG_DESCRIPTION}\n---\n",
    "a" * 65: f"---\nname: {'a' * 65}\ndescription: One too long.\n---\n",
    "long-compat": f"---\nname: long-compat\ndescription: Ok.\ncompatibility: {'c' * 501}\n---\n",
    "plain-md": "# Just markdown\nNo front matter.\n",
    "unclosed": "---\nname: unclosed\ndescription: Never closed.\n",
    "a-list": "---\n- name\n- description\n---\n",
}
# Valid for loop, invalid for skills-ref (strictyaml and its closed field list): what authors write and other agents read.
LENIENT = {
    "colon-value": "---\nname: colon-value\ndescription: Use when: the user deploys.\n---\n",
    "extra-fields": "---\nname: extra-fields\ndescription: Claude Code's own fields.\nwhen_to_use: deploys\n---\n",
}


def make(root: Path, table: dict[str, str], file: str = "SKILL.md") -> list[Path]:
    out = []
    for folder, text in table.items():
        (root / folder).mkdir(parents=True)
        (root / folder / file).write_bytes(text.encode())
        out.append(root / folder)
    return out


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> dict[str, list[Path]]:
    root = tmp_path_factory.mktemp("skills")
    return {"valid": make(root / "valid", VALID), "invalid": make(root / "invalid", INVALID),
            "lenient": make(root / "lenient", LENIENT)}


def test_valid_skills_agree_with_skills_ref(fixtures):
    for folder in fixtures["valid"]:
        ours, theirs = read_skill(folder, "project"), skills_ref.read_properties(folder)
        assert skills_ref.validate(folder) == [], folder.name
        assert isinstance(ours, Skill), (folder.name, ours)
        assert ours.name == theirs.name and ours.description == " ".join(theirs.description.split())


def test_invalid_skills_agree_with_skills_ref_and_say_why(fixtures):
    for folder in fixtures["invalid"]:
        ours = read_skill(folder, "project")
        assert skills_ref.validate(folder) != [], folder.name
        assert isinstance(ours, Invalid) and ours.reasons and all(r.strip() for r in ours.reasons), folder.name


def test_loop_is_lenient_where_authors_slip_and_skills_ref_is_not(fixtures):
    for folder in fixtures["lenient"]:
        assert skills_ref.validate(folder) != [], folder.name
        assert isinstance(read_skill(folder, "user"), Skill), folder.name
    colon = read_skill(fixtures["lenient"][0], "user")
    assert colon.description == "Use when: the user deploys."
    assert read_skill(fixtures["lenient"][1], "user").extra == ("when_to_use",)


def test_the_reasons_name_the_problem(fixtures):
    reasons = {f.name: " ".join(read_skill(f, "project").reasons) for f in fixtures["invalid"]}
    assert "not lower-case" in reasons["Upper-Name"]
    assert "not its folder's name 'other-dir'" in reasons["other-dir"]
    assert "no description" in reasons["no-desc"] and "no description" in reasons["empty-desc"]
    assert "no name" in reasons["no-name"]
    assert "longer than 1024" in reasons["long-desc"] and "longer than 64" in reasons["a" * 65]
    assert "does not start with a front matter" in reasons["plain-md"]
    assert "not closed" in reasons["unclosed"]


def test_a_lower_case_skill_md_is_read_like_skills_ref_reads_it(tmp_path):
    folder, = make(tmp_path, {"small-file": VALID["pdf-tools"].replace("pdf-tools", "small-file")}, "skill.md")
    assert skills_ref.validate(folder) == [] and isinstance(read_skill(folder, "user"), Skill)


def test_allowed_tools_is_kept_as_written_to_be_shown(fixtures):
    skill = read_skill(next(f for f in fixtures["valid"] if f.name == "data-export"), "project")
    assert skill.allowed_tools == "Bash(git:*) Read"


def test_yaml_tags_build_nothing_and_run_nothing(tmp_path):
    canary = tmp_path / "ran"
    text = (f"---\nname: tagged\ndescription: !!python/object/apply:os.system ['touch {canary}']\n"
            "other: !!python/object/new:subprocess.Popen [['touch', 'x']]\n---\n")
    folder, = make(tmp_path / "ws" / ".agents" / "skills", {"tagged": text})
    found = read_skill(folder, "project")
    assert not canary.exists()
    assert not isinstance(found, Skill) or isinstance(found.description, str)
    assert front_matter("---\na: !!binary aGVsbG8=\n---\n")[0] in ({"a": "aGVsbG8="}, {})


def test_a_project_skill_linked_outside_the_workspace_is_left_out(tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("---\nname: leak\ndescription: CANARY-SECRET-TEXT\n---\nCANARY-SECRET-BODY\n")
    ws = tmp_path / "ws"
    (ws / ".agents" / "skills" / "leak").mkdir(parents=True)
    (ws / ".agents" / "skills" / "leak" / "SKILL.md").symlink_to(secret)
    found = discover(ws, tmp_path / "home", tmp_path / "user")
    assert found.skills == () and "links outside the workspace" in found.invalid[0].reasons[0]
    # the same link among the user's own skills is theirs to make
    (tmp_path / "user" / ".agents" / "skills" / "leak").mkdir(parents=True)
    (tmp_path / "user" / ".agents" / "skills" / "leak" / "SKILL.md").symlink_to(secret)
    assert discover(ws, tmp_path / "home", tmp_path / "user").names == ("leak",)


def test_a_fifo_or_a_folder_named_skill_md_does_not_block_or_crash(tmp_path):
    root = tmp_path / "ws" / ".agents" / "skills"
    (root / "fifo").mkdir(parents=True)
    os.mkfifo(root / "fifo" / "SKILL.md")
    (root / "dir" / "SKILL.md").mkdir(parents=True)
    found = discover(tmp_path / "ws", tmp_path / "home", tmp_path / "user")
    assert {i.folder.name: i.reasons[0] for i in found.invalid} == {
        "dir": "SKILL.md is not a regular file", "fifo": "SKILL.md is not a regular file"}


def test_the_readme_s_example_skill_is_valid_for_loop_and_skills_ref(tmp_path):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Skills"):]
    example = section[section.index("```markdown\n") + 12: section.index("```", section.index("```markdown\n") + 12)]
    folder, = make(tmp_path, {"release": example})
    assert skills_ref.validate(folder) == []
    skill = read_skill(folder, "project")
    assert isinstance(skill, Skill) and skill.allowed_tools == "Bash(git:*)"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "  ", "\t"]), st.sampled_from(["name", "description", "metadata", "x-y"]),
                          st.text(alphabet="ab :#-'\"[]{}|>&*!%@`?,\t.é\x85\u2028\x01\r\ufeff", max_size=12)), max_size=5))
def test_the_fast_reading_of_plain_blocks_is_what_yaml_reads(lines):
    import yaml

    block = "".join(f"{lead}{key}:{' ' + value if value else ''}\n" for lead, key, value in lines)
    fast = plain_mapping(block)
    if fast is not None:
        assert fast == yaml.load(block, Loader=yaml.CBaseLoader), block


def test_a_billion_laughs_front_matter_is_read_in_linear_time(tmp_path):
    levels = "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))
    text = f"---\nname: laughs\ndescription: Aliases.\nl0: &l0 [lol]\n{levels}allowed-tools: *l9\n---\n"
    folder, = make(tmp_path, {"laughs": text})
    skill = read_skill(folder, "project")  # 9^9 "lol"s if anything turned the aliases into text
    assert isinstance(skill, Skill) and skill.allowed_tools == ""
