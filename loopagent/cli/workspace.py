"""Which directory a command works on: `-C DIR` when given, else the git repository around the cwd.

Every command that takes `-C` asks `find_workspace`, so `loop agent`, `loop undo` and `loop
sessions` run from one subdirectory agree on the workspace (and so on its sessions and checkpoints).
"""

from __future__ import annotations

from pathlib import Path


def repository_root(start: Path, home: Path | None = None) -> Path | None:
    """The nearest directory at or above `start` holding `.git` (a directory, or a worktree's file).

    `git rev-parse --show-toplevel` without spawning git. A repository at `home` itself (a dotfiles
    repository) is not taken: it would make every project and secret under home one workspace.
    """
    home = (home or Path.home()).resolve()
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return None if directory == home else directory
    return None


def find_workspace(given: Path | None, cwd: Path, home: Path | None = None) -> tuple[Path, str]:
    """(workspace, why): `given` as it is; else the repository root around `cwd`; else `cwd`.

    `why` is empty unless the workspace is not the cwd the user stands in; then it says so, once.
    """
    if given is not None:
        return given, ""
    cwd = cwd.resolve()
    root = repository_root(cwd, home)
    if root is None or root == cwd:
        return cwd if root is None else root, ""
    return root, f"workspace: {root} (the git repository around {cwd}; -C . to work in this directory only)"
