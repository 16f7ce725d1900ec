"""The tripwire: git metadata a shell command changed that would make git run a program, put back.

The walls keep the workspace's own `.git/config` and hooks read-only, but a command may still
write what git reads later, outside the sandbox: a nested repository whose config runs a program
(`git status` recurses into it once it is added), a `.git` file or `commondir` pointing elsewhere,
garbage in `.git/HEAD` so that git falls back to a bare repository planted at the root. So loop
snapshots the git metadata in the workspace before each command (`snapshot`) and compares after
(`put_back`): changed or outward `.git` files and `commondir`s are put back, a broken HEAD restored,
a new bare shape at the root loses its HEAD, new or rewritten hooks are moved aside, and a config
that gained an entry that runs a program (gitconfig.py) gets its old bytes back or, when new, loses
those entries. README "The tripwire" lists it all, and what is not watched: the walk is bounded
(depth, directory count, dependency and cache directories), except for the repositories the index
links to (gitindex.py). Repositories a command makes for its own work carry no such entry and keep
working. A workspace whose git dir lies outside it (a linked worktree, a submodule's checkout) has
that git dir and its common dir watched too, by absolute path.
"""

from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass, field
from typing import NamedTuple

from loopagent.sandbox.gitconfig import includes, running, without_running
from loopagent.sandbox.gitindex import gitlinks_of
from loopagent.sandbox.restorer import ASIDE, LINK, SPECIAL, Restorer

MAX_DEPTH = 8  # directories below the workspace root the walk goes
MAX_DIRS = 5_000  # directories it lists at most
MAX_GITLINKED = 200  # repositories followed through gitlinks at most
NOTE_ITEMS = 8  # what was put back, named in the note (the rest counted)
SKIP = frozenset({"node_modules", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache",
                  ".pytest_cache", ".ruff_cache", "site-packages"})
# Inside a git dir: what holds no other repository and may be large.
GIT_BULK = frozenset({"objects", "refs", "logs", "lfs", "hooks", "info", "rr-cache", "branches"})
GIT_FILES = frozenset({"commondir", "config", "config.worktree"})  # what a git dir may hold that is read
READ_LIMIT = 1 << 20  # bytes of a file kept; a config larger than this is in doubt
VALID_HEAD = re.compile(rb"(ref: refs/\S+|[0-9a-f]{40}|[0-9a-f]{64})\s*")


@dataclass
class Repo:
    head: bytes | None
    commondir: bytes | None
    hooks: frozenset[tuple[str, int, int]]  # (name, inode, ctime) of each hook that is not a sample


@dataclass
class Snapshot:
    """Workspace-relative paths ("" is the root) to what the tripwire compares."""

    root: str
    repos: dict[str, Repo] = field(default_factory=dict)  # git dirs (a `.git` dir, a bare shape)
    gitfiles: dict[str, bytes] = field(default_factory=dict)  # `.git` files and links: their contents
    configs: dict[str, bytes] = field(default_factory=dict)  # config files git would read
    truncated: bool = False  # the walk stopped at MAX_DIRS


def snapshot(root: str, watched: Snapshot | None = None) -> Snapshot:
    """The git metadata in the workspace at `root` now; also all that `watched` held (what a changed
    `commondir` or `.git` file led away from is still compared)."""
    snap = Snapshot(os.path.realpath(root))
    walk(snap)
    for rel in list(snap.gitfiles):
        path = pointed(snap.root, rel, snap.gitfiles[rel])
        # The workspace's own git dir may lie outside it (a linked worktree, a submodule's checkout):
        # watched too, by absolute path, as git reads it when the user runs git in the workspace.
        target = path if rel == ".git" and path and inside(snap.root, path) is None else inside(snap.root, path)
        if target is not None and target not in snap.repos:
            found = git_dir_at(snap.root, target)
            if found is not None:
                record_repo(snap, target, found.present)
    for rel in list(snap.repos):
        common = pointed(snap.root, rel + "/commondir", snap.repos[rel].commondir)
        target = inside(snap.root, common)
        target = common if target is None and rel.startswith("/") else target
        if target is not None and target not in snap.repos:
            found = git_dir_at(snap.root, target)
            if found is not None:
                record_repo(snap, target, found.present)  # a common dir: HEAD, config, hooks
            else:
                record_configs(snap, target)
    follow_gitlinks(snap)
    for path in global_configs():
        rel = inside(snap.root, path)
        if rel is not None:
            record_config(snap, rel)
    for rel in set(watched.repos if watched else ()) - set(snap.repos):
        if (found := git_dir_at(snap.root, rel)) is not None:
            record_repo(snap, rel, found.present)
    for rel in set(watched.configs if watched else ()) - set(snap.configs):
        record_config(snap, rel)
    return snap


def follow_gitlinks(snap: Snapshot) -> None:
    """The repositories `git status` in the workspace recurses into (its index's gitlinks, and theirs),
    wherever the walk stopped or skipped."""
    own = ".git" if ".git" in snap.repos else pointed(snap.root, ".git", snap.gitfiles.get(".git"))
    queue, seen = [(own, "")], set()
    while queue and len(seen) < MAX_GITLINKED:
        git_dir, tree = queue.pop()
        if git_dir is None or git_dir in seen or git_dir not in snap.repos:
            continue
        seen.add(git_dir)
        for link in gitlinks_of(os.path.join(snap.root, git_dir, "index"), snap.configs.get(f"{git_dir}/config")):
            rel = f"{tree}/{link}" if tree else link
            if os.path.normpath(rel) != rel or rel.startswith(("/", "../")):
                continue  # not a path git would write
            dot = f"{rel}/.git"
            if dot not in snap.repos and dot not in snap.gitfiles:
                found = git_dir_at(snap.root, dot)
                if found is not None:
                    record_repo(snap, dot, found.present)
                elif os.path.lexists(os.path.join(snap.root, dot)):
                    snap.gitfiles[dot] = read(os.path.join(snap.root, dot)) or b""
            target = inside(snap.root, pointed(snap.root, dot, snap.gitfiles.get(dot))) if dot in snap.gitfiles else dot
            if target is not None and target not in snap.repos and (found := git_dir_at(snap.root, target)):
                record_repo(snap, target, found.present)
            queue.append((target, rel))


def walk(snap: Snapshot) -> None:
    """Every directory down to MAX_DEPTH (MAX_DIRS at most): its git dir, its `.git` file."""
    root, now, listed = snap.root, time.time_ns(), 0
    stack: list[tuple[tuple[str, ...], int]] = [(("",), 0)]  # (sibling directories, their depth)
    while stack:
        rels, depth = stack.pop()
        for rel in rels:
            if listed >= MAX_DIRS:
                snap.truncated = True
                return
            listed += 1
            found = listing(root, rel, now)
            if found is None:
                continue
            if found.git_dir:
                record_repo(snap, rel, found.present)
            if found.gitfile:
                child = f"{rel}/.git" if rel else ".git"
                snap.gitfiles[child] = read(f"{root}/{child}") or b""
            if found.subdirs and depth < MAX_DEPTH:
                stack.append((found.subdirs, depth + 1))


class Listing(NamedTuple):
    """What the walk needs of one directory, kept while the directory's inode and ctime stay the same
    (a command can set a directory's mtime back, never its ctime)."""

    key: tuple[int, int, int]  # st_dev, st_ino, st_ctime_ns
    git_dir: bool
    present: frozenset[str]  # which of GIT_FILES the directory holds (no lstat for the missing ones)
    gitfile: bool  # a `.git` that is not a directory
    subdirs: tuple[str, ...]  # where the walk goes on (workspace-relative: kept only for the walk's calls)


LISTINGS: dict[str, Listing] = {}
CONTENTS: dict[str, tuple[tuple[int, int, int, int], bytes]] = {}
HOOK_NAMES: dict[str, tuple[tuple[int, int, int], tuple[str, ...]]] = {}
CACHED_MAX = 50_000
RACY_NS = 2_000_000_000  # changed this recently: a change within the same timestamp tick could hide


def listing(root: str, rel: str, now: int) -> Listing | None:
    path = f"{root}/{rel}" if rel else root
    try:
        st = os.lstat(path)
        key = (st.st_dev, st.st_ino, st.st_ctime_ns)
        hit = LISTINGS.get(path)
        if hit is not None and hit.key == key:
            return hit
        if not stat.S_ISDIR(st.st_mode):
            return None
        with os.scandir(path) as it:
            entries = {e.name: e for e in it}
    except OSError:
        return None
    git_dir = "HEAD" in entries and shaped(entries)
    dot_git = entries.get(".git")
    prefix = f"{rel}/" if rel else ""
    found = Listing(key, git_dir, GIT_FILES.intersection(entries), dot_git is not None and not dot_git.is_dir(follow_symlinks=False), tuple(
        prefix + name for name, e in entries.items()
        if e.is_dir(follow_symlinks=False) and name not in SKIP and not (git_dir and name in GIT_BULK)))
    if now - st.st_ctime_ns > RACY_NS:
        if len(LISTINGS) > CACHED_MAX:
            LISTINGS.clear()
        LISTINGS[path] = found
    return found


def git_dir_at(root: str, rel: str) -> Listing | None:
    """The listing of `rel` (or an absolute path) when it is a git dir; never kept (see Listing.subdirs)."""
    path = os.path.join(root, rel)
    found = listing(os.path.dirname(path), os.path.basename(path), 0)
    return found if found is not None and found.git_dir else None


def shaped(entries: dict[str, os.DirEntry]) -> bool:
    """A HEAD beside objects/ and refs/ (or a commondir that holds them): what git takes for a git dir."""
    if "commondir" in entries:
        return True
    objects, refs = entries.get("objects"), entries.get("refs")
    return bool(objects and refs and objects.is_dir() and refs.is_dir())


def record_repo(snap: Snapshot, rel: str, present: frozenset[str]) -> None:
    path = os.path.join(snap.root, rel)
    common = read(os.path.join(path, "commondir")) if "commondir" in present else None
    snap.repos[rel] = Repo(read(os.path.join(path, "HEAD")), common, hooks(path))
    record_configs(snap, rel, present)


def record_configs(snap: Snapshot, rel: str, present: frozenset[str] = GIT_FILES) -> None:
    for name in ("config", "config.worktree"):
        if name in present:
            record_config(snap, f"{rel}/{name}" if rel else name)


def record_config(snap: Snapshot, rel: str, depth: int = 0) -> None:
    """A config file's bytes, and those of the workspace files its includes name (git follows 10 deep)."""
    path = os.path.join(snap.root, rel)
    data = None if rel in snap.configs else read(path)
    if data is None:
        return
    snap.configs[rel] = data
    if depth >= 10 or data.startswith(LINK):
        return
    for name in includes(data):
        target = inside(snap.root, os.path.join(os.path.dirname(path), os.path.expanduser(name)))
        if target is not None:
            record_config(snap, target, depth + 1)


def hooks(git_dir: str) -> frozenset[tuple[str, int, int]]:
    """(name, inode, ctime) of each hook that is not a sample: a new one, or one rewritten in place."""
    path = os.path.join(git_dir, "hooks")
    try:
        st = os.lstat(path)
        key = (st.st_dev, st.st_ino, st.st_ctime_ns)
        hit = HOOK_NAMES.get(path)
        if hit is None or hit[0] != key:
            with os.scandir(path) as it:
                hit = key, tuple(e.name for e in it if not e.name.endswith((".sample", ASIDE)))
            if time.time_ns() - st.st_ctime_ns > RACY_NS:
                HOOK_NAMES[path] = hit
        found = []
        for name in hit[1]:
            hook = os.lstat(os.path.join(path, name))
            found.append((name, hook.st_ino, hook.st_ctime_ns))
        return frozenset(found)
    except OSError:
        return frozenset()


def read(path: str) -> bytes | None:
    """A file's first READ_LIMIT + 1 bytes, or LINK + the target of a symbolic link (never followed);
    None when there is none. Kept while the file's inode and ctime stay the same."""
    try:
        st = os.lstat(path)
        key = (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_size)
        hit = CONTENTS.get(path)
        if hit is not None and hit[0] == key:
            return hit[1]
        if stat.S_ISLNK(st.st_mode):
            data = LINK + os.fsencode(os.readlink(path))
        elif not stat.S_ISREG(st.st_mode):
            data = SPECIAL  # a FIFO would block the read; a directory is no file git reads
        else:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as f:
                data = f.read(READ_LIMIT + 1)
    except OSError:
        return None
    if time.time_ns() - st.st_ctime_ns > RACY_NS:
        if len(CONTENTS) > CACHED_MAX:
            CONTENTS.clear()
        CONTENTS[path] = (key, data)
    return data


def pointed(root: str, rel: str, data: bytes | None) -> str | None:
    """The absolute path a `.git` file (`gitdir: X`), link or `commondir` file at `rel` points to."""
    if not data:
        return None
    if data.startswith(LINK):
        target = data[len(LINK):]
    elif rel.endswith("commondir"):
        target = data.strip()
    else:
        if not data.startswith(b"gitdir:"):
            return None
        target = data[len(b"gitdir:"):].strip()
    if b"\0" in target:
        return None  # no path: treated as pointing outside
    return os.path.realpath(os.path.join(os.path.dirname(os.path.join(root, rel)), os.fsdecode(target)))


def inside(root: str, path: str | None) -> str | None:
    """`path` relative to `root` when it lies inside (after links), else None."""
    if path is None:
        return None
    real = os.path.realpath(path)
    if real == root:
        return ""
    return real[len(root) + 1:] if real.startswith(root + os.sep) else None


def global_configs() -> list[str]:
    """The user's own git configs, watched only when the workspace holds them (a workspace at ~)."""
    home = os.environ.get("HOME", "")
    xdg = os.environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
    return [p for p in (home and os.path.join(home, ".gitconfig"), xdg and os.path.join(xdg, "git", "config")) if p]


def valid_head(data: bytes | None) -> bool:
    return bool(data) and VALID_HEAD.fullmatch(data) is not None


def put_back(before: Snapshot) -> list[str]:
    """Compare the workspace with `before`, put back what must not change; what was done, one phrase each."""
    after = snapshot(before.root, before)
    fix = Restorer(before.root)
    fresh = set()  # repositories a new `.git` file points to: their config is judged as if new
    for rel, data in after.gitfiles.items():
        old = before.gitfiles.get(rel)
        if data == old:
            continue
        target = inside(after.root, pointed(after.root, rel, data))
        if old is not None:
            fix.restore(rel, old, "a changed `.git` file")
        elif target is None:
            fix.aside(rel, "a new `.git` file pointing outside the workspace")
        else:
            fresh.add(target)
    for rel, repo in after.repos.items():
        check_repo(fix, rel, repo, before.repos.get(rel))
    for rel, data in after.configs.items():
        check_config(fix, rel, data, None if os.path.dirname(rel) in fresh else before.configs.get(rel))
    return fix.done


def check_repo(fix, rel: str, repo: Repo, old: Repo | None) -> None:
    where = f"{rel}/" if rel else ""
    if old is not None and valid_head(old.head) and not valid_head(repo.head):
        fix.restore(where + "HEAD", old.head or b"", "a broken HEAD")
    if old is not None and repo.commondir != old.commondir:
        if old.commondir is None:
            fix.aside(where + "commondir", "a new `commondir`")
        else:
            fix.restore(where + "commondir", old.commondir, "a changed `commondir`")
    elif old is None and repo.commondir is not None and inside(fix.root, pointed(fix.root, where + "commondir",
                                                                                  repo.commondir)) is None:
        fix.aside(where + "commondir", "a `commondir` pointing outside the workspace")
    for name, *_ in sorted(repo.hooks - (old.hooks if old else frozenset())):
        fix.aside(f"{where}hooks/{name}", "a new or changed hook")
    if rel == "" and (old is None or not valid_head(old.head)) and valid_head(repo.head):
        fix.aside("HEAD", "a new bare repository at the workspace root")


def check_config(fix, rel: str, data: bytes, old: bytes | None) -> None:
    if data == old:
        return
    now = running(data) if not data.startswith(LINK) and len(data) <= READ_LIMIT else None
    then = running(old) if old is not None and not old.startswith(LINK) else frozenset()
    if now is not None and (not now or now <= (then or frozenset())):
        return  # nothing that runs a program was added
    if old is not None and len(old) <= READ_LIMIT:
        names = ", ".join(sorted({f"{s}.{k}" for s, _, k, _ in now - (then or frozenset())})) if now else ""
        fix.restore(rel, old, f"a config that gained {names or 'entries git may run'}")
    elif now is None:
        fix.aside(rel, "a config that cannot be read as git reads it")
    else:
        cleaned, cut = without_running(data)
        fix.rewrite(rel, cleaned, data, f"a new config's {', '.join(cut)}")


def note(done: list[str]) -> str:
    """The one line a call's result and the user's warning carry; "" when nothing was put back."""
    if not done:
        return ""
    more = f"; and {len(done) - NOTE_ITEMS} more" if len(done) > NOTE_ITEMS else ""
    return ("tripwire: the command changed git metadata that would make git run a program outside the "
            "sandbox; loop put it back: " + "; ".join(done[:NOTE_ITEMS]) + more)
