"""The file system around a workspace as the sandbox must treat it: what to pin, protect and hide.

Read from disk just before each command, because a command may create what the next one must
not touch. Everything here is a fact about paths; turning it into bwrap options is bwrap.py.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from loopagent.sandbox.spec import SandboxSpec

# Inside a git dir: what would run code later (hooks, config such as core.fsmonitor) or hold
# other repositories' hooks and config (modules/). The rest stays writable so `git commit` works.
GIT_PROTECTED_DIRS = ("hooks", "modules")
GIT_PROTECTED_FILES = ("config",)


@dataclass(frozen=True)
class Layout:
    """Absolute paths, each list in the order it is mounted."""

    writable: tuple[str, ...] = ()  # bound writable: extra dirs, a worktree's git dirs outside the workspace
    pinned: tuple[str, ...] = ()  # bound onto themselves so they cannot be renamed away (.git)
    protect: tuple[str, ...] = ()  # existing files and dirs re-bound read-only
    block_dirs: tuple[str, ...] = ()  # missing protected dirs: an empty read-only dir there
    block_files: tuple[str, ...] = ()  # missing protected files: /dev/null there, so none can be made
    hide_dirs: tuple[str, ...] = ()  # existing secret stores: an empty read-only dir over them
    hide_files: tuple[str, ...] = ()  # existing secret files: /dev/null over them

    def mount_points(self) -> tuple[str, ...]:
        """Paths bwrap creates on the host (through the writable workspace) to mount over."""
        return self.block_dirs + self.block_files


def survey(spec: SandboxSpec) -> Layout:
    """The layout of `spec.workspace` as it is on disk now."""
    ws = spec.workspace
    parts: dict[str, list[str]] = {k: [] for k in ("writable", "pinned", "protect", "block_dirs", "block_files")}
    if spec.mode == "workspace-write":
        parts["writable"] += [d for d in spec.writable if os.path.isdir(d)]
        guard_dir(os.path.join(ws, ".loop"), parts)
        git = os.path.join(ws, ".git")
        if os.path.isdir(git) and not os.path.islink(git):
            parts["pinned"].append(git)
            guard_git_dir(git, parts)
        elif os.path.lexists(git):
            parts["protect"].append(git)  # a gitdir: file (worktree, submodule) or a symlink
            guard_worktree(git, ws, parts)
        else:
            # No repository yet: `git init` inside would write hooks the user later runs.
            parts["block_dirs"].append(git)
    hide_dirs, hide_files = [], []
    for path in spec.hidden:
        if contains(path, ws) or not os.path.lexists(path):
            continue  # hiding an ancestor would hide the workspace itself
        (hide_dirs if os.path.isdir(path) else hide_files).append(path)
    return Layout(**{k: tuple(dict.fromkeys(v)) for k, v in parts.items()},
                  hide_dirs=tuple(hide_dirs), hide_files=tuple(hide_files))


def guard_dir(path: str, parts: dict[str, list[str]]) -> None:
    (parts["protect"] if os.path.exists(path) else parts["block_dirs"]).append(path)


def guard_file(path: str, parts: dict[str, list[str]]) -> None:
    (parts["protect"] if os.path.exists(path) else parts["block_files"]).append(path)


def guard_git_dir(git_dir: str, parts: dict[str, list[str]]) -> None:
    for name in GIT_PROTECTED_DIRS:
        guard_dir(os.path.join(git_dir, name), parts)
    for name in GIT_PROTECTED_FILES:
        guard_file(os.path.join(git_dir, name), parts)


def guard_worktree(dot_git: str, ws: str, parts: dict[str, list[str]]) -> None:
    """Follow `gitdir:` to the real git dir (and its common dir), writable but with hooks and config protected."""
    git_dir = read_pointer(dot_git, "gitdir:", os.path.dirname(dot_git)) if os.path.isfile(dot_git) else None
    if git_dir is None or not looks_like_git_dir(git_dir):
        return  # not a repository git would use; the .git file itself is protected
    common = read_pointer(os.path.join(git_dir, "commondir"), "", git_dir) or git_dir
    if not looks_like_git_dir(common):
        common = git_dir
    for d in dict.fromkeys([common, git_dir]):  # the parent first, or it would cover the other
        if not contains(ws, d):
            parts["writable"].append(d)  # so git commit can write objects, refs and the index
        parts["pinned"].append(d)
    for name in ("commondir", "gitdir", "config.worktree"):
        if git_dir != common and os.path.exists(os.path.join(git_dir, name)):
            parts["protect"].append(os.path.join(git_dir, name))  # commondir would repoint the hooks
    guard_git_dir(common, parts)


def read_pointer(path: str, prefix: str, base: str) -> str | None:
    """The path a one-line pointer file names (relative to `base`), resolved; None when unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            line = f.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not line.startswith(prefix) or not line[len(prefix):].strip():
        return None
    return os.path.realpath(os.path.join(base, line[len(prefix):].strip()))


def looks_like_git_dir(path: str) -> bool:
    # A hostile .git file could point anywhere ($HOME, /); only a real git dir is made writable.
    return (os.path.isfile(os.path.join(path, "HEAD"))
            and (os.path.isdir(os.path.join(path, "objects")) or os.path.isfile(os.path.join(path, "commondir")))
            and path not in ("/", os.path.expanduser("~")))


def contains(parent: str, child: str) -> bool:
    """True when `child` is `parent` or lies below it."""
    return child == parent or child.startswith(parent.rstrip("/") + "/")
