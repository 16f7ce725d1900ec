"""The git directories a sandboxed command can reach, and what in each must not change.

Git reads files from a git dir that make it run programs (config: core.fsmonitor, hooks/, the
attributes in info/ that pick filters) or that send it to read them elsewhere (commondir, and
config.worktree). A command may write the rest (objects, refs, logs, the index, HEAD and the
transient files of a commit), so `git commit` works; those files and dirs are re-bound read-only
when they exist and covered by a placeholder when they do not, so none can be created either.

Reached: the workspace's `.git`, the git dir (and common dir) a `.git` file points to,
`.git/modules/` and `.git/worktrees/` (read-only as a whole: other checkouts' git dirs), and the
existing nested repositories a bounded scan of the workspace finds. A `.git` file pointing
outside the workspace is followed into a writable bind only when the git dir points back at it
(a real worktree or submodule): otherwise a shipped `gitdir: ../victim/.git` would make another
repository writable. Each bind costs bwrap ~0.3 ms (it rereads the mount table per bind), so
git dirs beyond the first few are bound read-only whole: one bind each, and no commits there.
"""

from __future__ import annotations

import os

GUARDED_DIRS = ("hooks", "info")
# commondir is missing in most git dirs, and git refuses an empty one: its placeholder is a stub
# naming the git dir itself (".") that loop writes and removes, not /dev/null. A `gitdir` file
# matters only in a linked worktree's git dir (`git worktree prune` reads it): guarded there.
GUARDED_FILES = ("config", "config.worktree")
COMMONDIR_STUB = ".\n"
# A linked worktree's git dir takes hooks, info and config from the common dir; only these (and
# commondir, and modules/) are its own.
WORKTREE_FILES = ("gitdir", "config.worktree")
# Git dirs other than the workspace's own (nested repositories, checked-out submodules) kept
# writable with their guards (~7 binds each); beyond these, each is one read-only bind.
WRITABLE_NESTED = 4

# The nested scan: bounded, so a huge workspace costs little; what it misses the tripwire still sees.
SCAN_DEPTH = 4  # directory levels below the workspace
SCAN_DIRS = 256  # directories read at most (the scan runs before every call): 5 ms at most on a busy machine
SCAN_REPOS = 32  # nested repositories guarded at most
SKIP_DIRS = frozenset({"node_modules", ".venv", "venv", ".tox", ".nox", "__pycache__", ".mypy_cache",
                       ".pytest_cache", ".ruff_cache", "site-packages", ".git", ".hg", ".svn", "target",
                       ".gradle", ".cache", "dist", "build"})


def guard_repositories(ws: str, parts: dict[str, list[str]]) -> None:
    """Add to `parts` the binds that guard every git dir reachable from the workspace `ws`."""
    git = os.path.join(ws, ".git")
    if os.path.isdir(git) and not os.path.islink(git):
        guard_git_dir(git, parts)
    elif os.path.lexists(git):
        parts["protect"].append(git)  # a gitdir: file (worktree, submodule) or a symlink
        follow(git, ws, parts)
    else:
        # No repository yet: `git init` inside would write hooks the user later runs.
        parts["block_dirs"].append(git)
    writable = WRITABLE_NESTED
    for dot_git in nested_repositories(ws):
        if os.path.islink(dot_git):
            continue  # never bound: a bind would follow it out of the workspace
        if os.path.isdir(dot_git):
            if writable > 0:
                guard_git_dir(dot_git, parts)
            else:
                parts["protect"].append(dot_git)
        else:
            parts["protect"].append(dot_git)
            if writable > 0:
                follow(dot_git, ws, parts)
        writable -= 1


def guard_git_dir(git_dir: str, parts: dict[str, list[str]]) -> None:
    """Pin `git_dir` (bound onto itself, so it cannot be renamed away and replaced) and guard what runs code."""
    if read_only_if_linked(git_dir, (*GUARDED_DIRS, *GUARDED_FILES, "commondir", "modules", "worktrees"), parts):
        return
    parts["pinned"].append(git_dir)
    for name in GUARDED_DIRS:
        guard_dir(os.path.join(git_dir, name), parts)
    for name in GUARDED_FILES:
        guard_file(os.path.join(git_dir, name), parts)
    guard(os.path.join(git_dir, "commondir"), parts, "stubs")
    guard_dir(os.path.join(git_dir, "modules"), parts)  # submodules' git dirs; one a checkout uses is followed
    worktrees = os.path.join(git_dir, "worktrees")
    if os.path.lexists(worktrees):
        parts["protect"].append(worktrees)  # other checkouts' git dirs; the workspace's own is followed


def guard_worktree_dir(git_dir: str, parts: dict[str, list[str]]) -> None:
    """A linked worktree's own git dir: its pointers, its config.worktree and its submodules' git dirs
    (hooks, info and config come from the common dir)."""
    if read_only_if_linked(git_dir, (*WORKTREE_FILES, "commondir", "modules"), parts):
        return
    parts["pinned"].append(git_dir)
    for name in WORKTREE_FILES:
        guard_file(os.path.join(git_dir, name), parts)
    guard(os.path.join(git_dir, "commondir"), parts, "stubs")
    guard_dir(os.path.join(git_dir, "modules"), parts)


def read_only_if_linked(git_dir: str, names: tuple[str, ...], parts: dict[str, list[str]]) -> bool:
    """Bind `git_dir` read-only as a whole when one of `names` in it is a symbolic link (a `.git/hooks`
    linked to a shared dir): a bind lands on the link's target, and the link itself could be replaced."""
    if not any(os.path.islink(os.path.join(git_dir, name)) for name in names):
        return False
    parts["protect"].append(git_dir)
    return True


def follow(dot_git: str, ws: str, parts: dict[str, list[str]]) -> None:
    """Guard the git dir a `gitdir:` file names; bind it writable when outside the workspace and pointing back."""
    git_dir = read_pointer(dot_git, "gitdir:", os.path.dirname(dot_git)) if os.path.isfile(dot_git) else None
    if git_dir is None or not looks_like_git_dir(git_dir):
        return  # not a repository git would use; the .git file itself is protected
    common = common_dir(git_dir)
    if common is None:
        return
    if not (contains(ws, git_dir) and contains(ws, common)) and not points_back(git_dir, dot_git):
        return  # left read-only, as the rest of the machine
    for d in dict.fromkeys([common, git_dir]):  # the parent first, or it would cover the other
        if not contains(ws, d):
            parts["writable"].append(d)  # so git commit can write objects, refs and the index
        (guard_git_dir if d == common else guard_worktree_dir)(d, parts)


def common_dir(git_dir: str) -> str | None:
    """The common dir of `git_dir`: itself, or for a linked worktree the repository holding it in worktrees/."""
    if not os.path.lexists(os.path.join(git_dir, "commondir")):
        return git_dir
    common = read_pointer(os.path.join(git_dir, "commondir"), "", git_dir)
    if common in (git_dir, None):
        return git_dir if common else None
    # A real worktree's git dir is COMMON/worktrees/NAME; a commondir naming anything else is not followed.
    if os.path.dirname(git_dir) != os.path.join(common, "worktrees") or not looks_like_git_dir(common):
        return None
    return common


def points_back(git_dir: str, dot_git: str) -> bool:
    """True when `git_dir` belongs to the checkout holding `dot_git`: a worktree's `gitdir` file names it,
    or a submodule's `core.worktree` is its directory."""
    back = read_pointer(os.path.join(git_dir, "gitdir"), "", git_dir)
    if back is not None:
        return back == os.path.realpath(dot_git)
    worktree = core_worktree(os.path.join(git_dir, "config"))
    return worktree is not None and os.path.realpath(os.path.join(git_dir, worktree)) == \
        os.path.realpath(os.path.dirname(dot_git))


def core_worktree(config: str) -> str | None:
    """`core.worktree` of a git config file, read by hand (running git on it could run what it names)."""
    try:
        with open(config, encoding="utf-8") as f:
            lines = f.read(65536).splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    section, found = "", None
    for raw in lines:
        line = raw.strip()
        if line.startswith("["):
            section = line[1:line.find("]")].strip().lower() if "]" in line else ""
            line = line[line.find("]") + 1:].strip() if "]" in line else ""
        key, eq, value = line.partition("=")
        if section == "core" and eq and key.strip().lower() == "worktree":
            found = value.strip().strip('"')  # the last one wins, as in git
    return found


def nested_repositories(ws: str) -> list[str]:
    """`.git` dirs and files and bare repositories below the workspace's top, breadth first, in name
    order, within the scan's bounds."""
    found: list[str] = []
    level, read = [ws], 0
    for _ in range(SCAN_DEPTH):
        below: list[str] = []
        for path in level:
            if read >= SCAN_DIRS:
                return found
            read += 1
            try:
                with os.scandir(path) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            if path != ws and is_bare(entries):
                found.append(path)  # a bare repository (git uses its config when run inside it)
            else:
                found += [e.path for e in entries if e.name == ".git" and path != ws]
                below += [e.path for e in entries if e.name not in SKIP_DIRS and e.is_dir(follow_symlinks=False)]
            if len(found) >= SCAN_REPOS:
                return found[:SCAN_REPOS]
        level = below
    return found


def is_bare(entries: list[os.DirEntry]) -> bool:
    """A directory shaped as a bare repository: a HEAD file beside objects/ and refs/."""
    kinds = {e.name: e.is_dir(follow_symlinks=False) for e in entries if e.name in ("HEAD", "objects", "refs")}
    return kinds == {"HEAD": False, "objects": True, "refs": True}


def guard_dir(path: str, parts: dict[str, list[str]]) -> None:
    guard(path, parts, "block_dirs")


def guard_file(path: str, parts: dict[str, list[str]]) -> None:
    guard(path, parts, "block_files")


def guard(path: str, parts: dict[str, list[str]], missing: str) -> None:
    """Re-bind `path` read-only, or cover it with a placeholder (in `parts[missing]`) when it is missing."""
    if os.path.lexists(path):
        parts["protect"].append(path)
    elif os.access(os.path.dirname(path), os.W_OK):
        parts[missing].append(path)
    # else: a dir loop's user cannot write; no command can create it there either, and bwrap could not
    # make the mount point (every call would fail)


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
    # A hostile .git file could point anywhere ($HOME, /); only a real git dir is guarded or bound.
    return (os.path.isfile(os.path.join(path, "HEAD"))
            and (os.path.isdir(os.path.join(path, "objects")) or os.path.isfile(os.path.join(path, "commondir")))
            and path not in ("/", os.path.expanduser("~")))


def contains(parent: str, child: str) -> bool:
    """True when `child` is `parent` or lies below it."""
    return child == parent or child.startswith(parent.rstrip("/") + "/")
