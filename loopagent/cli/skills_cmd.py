"""`loop skills [-C DIR]`: every Agent Skill found, where it comes from, which hides which, and what is wrong
with each invalid one (loopagent/skills/)."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from loopagent.cli.config_cmd import Workspace, root_of, say


def register(app: typer.Typer) -> None:
    app.command("skills")(skills)


def skills(workspace: Workspace = None) -> None:
    """The Agent Skills found in <workspace>/.agents/skills, <workspace>/.loop/skills, ~/.agents/skills and
    $LOOP_HOME/skills: the valid ones (those the model may load), the ones another of their name hides, and
    the invalid ones with the reasons. A skill's allowed-tools is shown but never obeyed."""
    from loopagent.config import loop_home
    from loopagent.skills import discover

    root = root_of(workspace)
    if not root.is_dir():
        typer.echo(f"loop: workspace {root} is not a directory", err=True)
        raise typer.Exit(2)
    found = discover(root, loop_home(dict(os.environ)))
    for line in listing(found, root, Path(os.path.expanduser("~"))):
        say(line)


def listing(found, root: Path, user_home: Path) -> list[str]:
    """The lines `loop skills` prints for `found` (paths shown relative to the workspace, or with ~)."""

    def where(folder: Path) -> str:
        for base, shown in ((root, ""), (user_home, "~/")):
            try:
                return shown + folder.relative_to(base).as_posix()
            except ValueError:
                continue
        return str(folder)

    project = sum(s.origin == "project" for s in found.skills)
    lines = [f"{len(found.skills)} skill{'s' if len(found.skills) != 1 else ''} "
             f"({project} project, {len(found.skills) - project} user), {len(found.invalid)} invalid"]
    if not found.skills and not found.invalid:
        lines.append("add one as .agents/skills/NAME/SKILL.md (front matter: name, description); see the README")
    for skill in found.skills:
        lines += ["", f"{skill.name}  {skill.origin}  {where(skill.folder)}", f"  {skill.description}"]
        if skill.allowed_tools:
            lines.append(f"  allowed-tools: {skill.allowed_tools} (shown only: loop's approval mode and rules decide)")
        if skill.extra:
            lines.append(f"  fields loop does not use: {', '.join(skill.extra)}")
    if found.hidden:
        lines += ["", "hidden by a skill of the same name:"]
        lines += [f"  {lost.name}  {lost.origin}  {where(lost.folder)}  (hidden by {where(won.folder)})"
                  for lost, won in found.hidden]
    if found.invalid:
        lines += ["", "invalid (left out):"]
        for bad in found.invalid:
            lines.append(f"  {bad.name or bad.folder.name}  {bad.origin}  {where(bad.folder)}")
            lines += [f"    {reason}" for reason in bad.reasons]
    return lines
