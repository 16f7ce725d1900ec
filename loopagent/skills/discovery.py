"""Where skills are found: the project's folders first, then the user's; a project skill hides the user's
skill of the same name (with a warning, since the repository now decides what that name means)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from loopagent.skills.parse import FILE_NAMES, Invalid, Skill, read_skill

MAX_FOLDERS = 5000  # per skills folder: a huge tree must not stall the start


def roots(workspace: Path, home: Path, user_home: Path | None = None) -> list[tuple[Path, str]]:
    """The skills folders in the order they count, each with its origin: `<workspace>/.agents/skills`,
    `<workspace>/.loop/skills`, `~/.agents/skills`, `$LOOP_HOME/skills` (`home`)."""
    user = user_home if user_home is not None else Path(os.path.expanduser("~"))
    return [(workspace / ".agents" / "skills", "project"), (workspace / ".loop" / "skills", "project"),
            (user / ".agents" / "skills", "user"), (home / "skills", "user")]


@dataclass(frozen=True)
class Found:
    """Every skill found: the valid ones in catalog order (project first, then user; by name within each),
    the invalid ones with their reasons, and each skill hidden by another of its name."""

    skills: tuple[Skill, ...] = ()
    invalid: tuple[Invalid, ...] = ()
    hidden: tuple[tuple[Skill, Skill], ...] = ()  # (the skill left out, the one of its name that counts)

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.skills)

    @property
    def warnings(self) -> list[str]:
        """One line for each user skill a project skill hides."""
        return [f"the project's skill {winner.name!r} ({winner.folder}) overrides the user's ({loser.folder})"
                for loser, winner in self.hidden if winner.origin == "project" and loser.origin == "user"]


def discover(workspace: Path, home: Path, user_home: Path | None = None) -> Found:
    """The skills of `workspace` and of the user (`home`: $LOOP_HOME; `user_home`: ~). Reads front matter
    only; never runs anything found."""
    inside = Path(os.path.realpath(workspace))
    valid: dict[str, Skill] = {}
    invalid: list[Invalid] = []
    hidden: list[tuple[Skill, Skill]] = []
    for root, origin in roots(workspace, home, user_home):
        real_root = Path(os.path.realpath(root)) if origin == "project" else None
        for folder, file, direct in skill_folders(root):
            real = real_root / folder.name / file.name if real_root is not None and direct else None
            found = read_skill(folder, origin, inside if origin == "project" else None, file, real)
            if isinstance(found, Invalid):
                invalid.append(found)
            elif found.name in valid:
                hidden.append((found, valid[found.name]))
            else:
                valid[found.name] = found
    ordered = sorted(valid.values(), key=lambda s: (s.origin != "project", s.name))
    return Found(tuple(ordered), tuple(invalid), tuple(hidden))


def skill_folders(root: Path) -> list[tuple[Path, Path, bool]]:
    """(folder, its SKILL.md, whether neither is a link) for the folders directly in `root` that hold one, by
    name; hidden folders are skipped."""
    try:
        with os.scandir(root) as entries:
            found = sorted((e.name, e.is_symlink()) for e in entries if not e.name.startswith(".") and e.is_dir())
    except OSError:  # no such folder (the common case), or not readable
        return []
    out = []
    root_text = os.fspath(root)
    for name, linked in found[:MAX_FOLDERS]:
        for file_name in FILE_NAMES:
            path = os.path.join(root_text, name, file_name)
            if os.path.lexists(path):
                out.append((root / name, Path(path), not linked and not os.path.islink(path)))
                break
    return out


def available_skills(workspace: Path, home: Path, user_home: Path | None = None) -> list[Skill]:
    """The valid skills of `workspace` for `home` ($LOOP_HOME), in catalog order: what a front-end offers
    as commands (ACP's available commands: `$NAME` loads one)."""
    return list(discover(workspace, home, user_home).skills)
