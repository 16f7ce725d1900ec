"""One skill folder: its SKILL.md's front matter read leniently, then checked by the rules of the Agent
Skills format (agentskills.io; the same rules as its reference library, skills-ref).

Lenient where authors slip and other agents still read the skill: a colon in an unquoted value, fields
the format does not name, a missing optional field. Strict where the model or the user would be misled:
a name that is not the folder's, or a description that is missing or too long; such a skill is left out
with the reason. Reading never runs anything: YAML is read with the base loader (every scalar a string,
no tags, no objects), and only the first MAX_HEAD bytes of the file are read to find it.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
MAX_HEAD = 64 * 1024  # the front matter must close within this many bytes
MAX_BODY = 1024 * 1024  # a SKILL.md is read at most this far when loaded
FILE_NAMES = ("SKILL.md", "skill.md")  # skills-ref accepts the lower-case name too
FRONT = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)
KEY_LINE = re.compile(r"^([A-Za-z0-9_-]+)[ \t]*:(.*)$")
# A `key: value` line whose value YAML's base loader reads as its own text: no quote, flow, block, anchor, tag
# or comment indicator, no `: ` inside. Blocks of such lines (one level of nesting, as `metadata:` has) are read
# without YAML, about ten times faster at a thousand skills; anything else goes to YAML.
PLAIN_LINE = re.compile(r"( *)([A-Za-z0-9_-]+):(?:[ \t]+((?=\S)(?![-:'\"\[\]{}>|&*!%@`#?,])"
                        r"(?:[^\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ufeff:#]|:(?=\S)|(?<=\S)#)+?))?[ \t]*")


@dataclass(frozen=True)
class Skill:
    """A valid skill: what the catalog lists and `load_skill` loads."""

    name: str
    description: str
    folder: Path  # where it was found (links not resolved: the path the user knows)
    file: Path  # its SKILL.md
    origin: str  # "project" or "user"
    allowed_tools: str = ""  # shown by `loop skills`, never obeyed (skills guide, never grant)
    extra: tuple[str, ...] = field(default=(), compare=False)  # fields the format does not name
    inside: Path | None = None  # a project skill: the real workspace root its files must stay in


@dataclass(frozen=True)
class Invalid:
    """A folder that looked like a skill but is left out, and why."""

    folder: Path
    origin: str
    reasons: tuple[str, ...]
    name: str = ""  # what its front matter called it, when it said


def read_skill(folder: Path, origin: str, inside: Path | None = None, file: Path | None = None,
               real: Path | None = None) -> Skill | Invalid:
    """The skill in `folder` (which holds a SKILL.md: `file` when the caller found it), or why it is left out.
    Never raises for its content.

    `inside`: the real workspace root a project skill must stay in: a SKILL.md linked to a file elsewhere
    (a key in ~/.ssh) must not reach the model. `real`: the file's real path when the caller knows it (no link
    on the way), which saves resolving each of a thousand skills."""
    if file is None:
        file = next((folder / n for n in FILE_NAMES if os.path.lexists(folder / n)), folder / FILE_NAMES[0])
    real = real or Path(os.path.realpath(file))
    if inside is not None and inside not in real.parents:
        return Invalid(folder, origin, (f"{file.name} links outside the workspace",))
    head = read_head(real, MAX_HEAD)
    if isinstance(head, str):
        return Invalid(folder, origin, (f"{file.name} {head}",))
    text = head.decode("utf-8", errors="replace")
    meta, problem = front_matter(text)
    if problem:
        return Invalid(folder, origin, (problem,))
    name, description = meta.get("name"), meta.get("description")
    reasons = [*name_problems(name, folder.name), *description_problems(description)]
    compatibility = meta.get("compatibility")
    if isinstance(compatibility, str) and len(compatibility) > MAX_COMPATIBILITY:
        reasons.append(f"compatibility is longer than {MAX_COMPATIBILITY} characters ({len(compatibility)})")
    shown = unicodedata.normalize("NFKC", name.strip()) if isinstance(name, str) else ""
    if reasons:
        return Invalid(folder, origin, tuple(reasons), shown)
    assert isinstance(description, str)
    tools = meta.get("allowed-tools", "")
    # strings only: a list of aliases of lists (a "billion laughs") would be exponential to turn into text
    tools = " ".join(t for t in tools if isinstance(t, str)) if isinstance(tools, list) else \
        tools if isinstance(tools, str) else ""
    extra = tuple(sorted(k for k in meta if k not in KNOWN_FIELDS))
    return Skill(shown, " ".join(description.split()), folder, file, origin, tools, extra, inside)


KNOWN_FIELDS = {"name", "description", "license", "allowed-tools", "metadata", "compatibility"}


def front_matter(text: str) -> tuple[dict, str]:
    """(the front matter of a SKILL.md as a mapping of strings, lists and mappings; '') or ({}, what is
    wrong with it)."""
    match = FRONT.match(text)
    if match is None:
        if not text.lstrip("\ufeff").startswith("---"):
            return {}, "SKILL.md does not start with a front matter block (---)"
        return {}, f"the front matter is not closed with --- (within the first {MAX_HEAD // 1024} KiB)"
    block = match.group(1).replace("\r\n", "\n")
    meta = plain_mapping(block)
    if meta is None:
        meta = yaml_mapping(block)
    if meta is None:
        meta = loose_mapping(block)  # YAML refused it: `description: Use when: X` is how people write
    if not meta:
        return {}, "the front matter is not a mapping of fields"
    return meta, ""


def plain_mapping(block: str) -> dict | None:
    """The block as YAML's base loader reads it, when it is only plain `key: value` lines (and `key:` with
    indented plain lines under it); None for anything else."""
    meta: dict = {}
    parent, indent = None, None
    for line in block.split("\n"):
        if not line.strip():
            continue
        hit = PLAIN_LINE.fullmatch(line)
        if hit is None:
            return None
        lead, key, value = hit.groups()
        if not lead:
            parent, indent = (key, None) if value is None else (None, None)
            meta[key] = {} if value is None else value
        elif parent is None or value is None or (indent is not None and lead != indent):
            return None
        else:
            indent = lead
            meta[parent][key] = value
    return {k: "" if v == {} else v for k, v in meta.items()} or None


def yaml_mapping(block: str) -> dict | None:
    """The block read as YAML with the base loader (strings only, nothing constructed); None if it is not
    a YAML mapping."""
    import yaml

    loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
    try:
        data = yaml.load(block, Loader=loader)  # noqa: S506 - the base loader builds strings, lists and dicts only
    except yaml.YAMLError:
        return None
    return data if isinstance(data, dict) and all(isinstance(k, str) for k in data) else None


def loose_mapping(block: str) -> dict:
    """`key: value` lines, an indented line continuing the value before it; quotes around a value taken off."""
    meta: dict[str, str] = {}
    key = None
    for line in block.splitlines():
        hit = KEY_LINE.match(line)
        if hit and not line[:1].isspace():
            key = hit.group(1)
            meta[key] = hit.group(2).strip()
        elif key is not None and line.strip() and line[:1].isspace():
            meta[key] = f"{meta[key]} {line.strip()}".strip()
    for k, v in meta.items():
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
            meta[k] = v[1:-1]
        elif v in ("|", ">", "|-", ">-"):
            meta[k] = ""
        elif v[:2] in ("| ", "> ", "|-", ">-"):
            meta[k] = v[2:].strip()
    return meta


def name_problems(name: object, folder_name: str) -> list[str]:
    """What is wrong with a skill's name (lower-case letters and digits, single hyphens inside, at most 64
    characters, the folder's name); [] when nothing."""
    if not isinstance(name, str) or not name.strip():
        return ["the front matter has no name"]
    name = unicodedata.normalize("NFKC", name.strip())
    out = []
    if len(name) > MAX_NAME:
        out.append(f"the name is longer than {MAX_NAME} characters ({len(name)})")
    if name != name.lower():
        out.append(f"the name {name!r} is not lower-case")
    if name.startswith("-") or name.endswith("-") or "--" in name:
        out.append(f"the name {name!r} starts or ends with a hyphen or has two in a row")
    if not all(c.isalnum() or c == "-" for c in name):
        out.append(f"the name {name!r} has characters other than letters, digits and hyphens")
    if unicodedata.normalize("NFKC", folder_name) != name:
        out.append(f"the name {name!r} is not its folder's name {folder_name!r}")
    return out


def description_problems(description: object) -> list[str]:
    if not isinstance(description, str) or not description.strip():
        return ["the front matter has no description"]
    if len(description) > MAX_DESCRIPTION:
        return [f"the description is longer than {MAX_DESCRIPTION} characters ({len(description)})"]
    return []


def read_head(path: Path, size: int) -> bytes | str:
    """The first `size` bytes of a regular file, or why it was not read (a FIFO would block, a link could
    have been swapped in since it was checked)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # before fdopen, which refuses a directory itself
            return "is not a regular file"
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(size)
    finally:
        os.close(fd)


def body_of(skill: Skill) -> str:
    """The instructions of a skill: its SKILL.md without the front matter (read afresh: it may have been
    edited since discovery; a project skill's file is checked again, since the model may have replaced it
    with a link to a file outside the workspace). Raises OSError when it cannot be read."""
    real = Path(os.path.realpath(skill.file))
    if skill.inside is not None and skill.inside not in real.parents:
        raise OSError(f"{skill.file} links outside the workspace")
    head = read_head(real, MAX_BODY)
    if isinstance(head, str):
        raise OSError(f"{skill.file} {head}")
    text = head.decode("utf-8", errors="replace")
    match = FRONT.match(text)
    return (text[match.end():] if match else text).strip()
