"""What the file tools never write: `.git/` and `.loop/` at any depth, loop's home, the real git dir.

A git hook or a `core.fsmonitor` in `.git/config` runs code later, outside every check; `.loop/`
holds loop's own configuration (and at a workspace in `~`, `$LOOP_HOME` is inside it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loopagent.tools.workspace import Workspace

# Directory names loop never writes below, at any depth, and why.
PROTECTED_NAMES = {
    ".git": "git hooks and config run code",
    ".loop": "it holds loop's own configuration",
}


def protection(ws: Workspace, real: Path) -> str | None:
    """Why loop may not write the real path `real` (a sentence for the model), or None."""
    rel = ws.rel(real)
    why = protected_name(list(ws.parts_of(real)), rel)
    if why:
        return why
    for home in ws.protected:
        if real == home or home in real.parents:
            return (f"{rel} is protected: it is inside loop's home {home} (settings, sessions); "
                    "change it yourself")
    for gitdir in git_dirs(ws):
        if real == gitdir or gitdir in real.parents:
            return (f"{rel} is protected: it is the repository's git directory (git hooks and config "
                    "run code); loop never writes it; change it yourself")
    return git_shape(ws, real)


# What makes git take a directory for a repository of its own (a bare one at the workspace root is found
# by the user's next `git status` when `.git` is broken, or when there is no `.git` at all).
GIT_DIR_SHAPE = (("HEAD", False), ("objects", True), ("refs", True))


def git_shape(ws: Workspace, real: Path) -> str | None:
    """Why writing `real` would complete a git directory's shape (HEAD, objects/, refs/) in one of its
    folders inside the workspace, or None. The shell's tripwire cannot see what the file tools write."""
    for folder in real.parents:
        if not ws.contains(folder):
            break
        shape = [real == folder / name or (folder / name) in real.parents
                 or ((folder / name).is_dir() if is_dir else (folder / name).is_file())
                 for name, is_dir in GIT_DIR_SHAPE]
        if all(shape):
            where = ws.rel(folder) or "."
            return (f"{ws.rel(real)} is protected: with it {where} would have the shape of a git directory "
                    "(HEAD, objects/, refs/), whose config and hooks git runs; loop never writes that shape")
    return None


def protected_name(parts: list[str], rel: str) -> str | None:
    """Why a path with these components may not be written (a .git or .loop among them), or None."""
    for name in parts:
        if name in PROTECTED_NAMES:
            return (f"{rel} is protected: loop never writes {name}/ ({PROTECTED_NAMES[name]}); "
                    "change it yourself")
    return None


def git_dirs(ws: Workspace) -> list[Path]:
    """Where the root's `.git` really is when that is elsewhere inside the workspace.

    `.git` may be a symlink or a `gitdir: PATH` file (a worktree, a submodule); git then runs the
    hooks and config found there, and a worktree's `commondir` names the shared directory.
    """
    dot_git = ws.root / ".git"
    try:
        if dot_git.is_symlink():
            found = [Path(os.path.realpath(dot_git))]
        elif dot_git.is_file():
            line = dot_git.read_text(errors="replace")[:4096].strip()
            if not line.startswith("gitdir:"):
                return []
            found = [Path(os.path.realpath(ws.root / line.removeprefix("gitdir:").strip()))]
        else:
            return []
        common = found[0] / "commondir"
        if common.is_file():
            found.append(Path(os.path.realpath(found[0] / common.read_text(errors="replace").strip())))
    except OSError:
        return []
    inside = [p for p in found if ws.contains(p) and p != ws.root]
    if ws.root in found:  # `gitdir: .`: the root itself is the repository; guard what runs code
        inside += [ws.root / "config", ws.root / "hooks", ws.root / "commondir"]
    return inside
