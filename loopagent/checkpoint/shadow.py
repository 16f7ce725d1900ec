"""The shadow repository: git plumbing on a separate git directory and a private index.

Every command runs as `git --git-dir=<shadow> --work-tree=<workspace>` with its own
index file and without the user's global/system config, so the workspace's own `.git`
(branches, index, stash, hooks) is never read or written. Git never adds a path with a
`.git` component; nested repositories are left out and reported.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

REF = "refs/heads/checkpoints"
BULK = 1000  # a first snapshot of at least this many files goes through fast-import
MAX_FILES = 200_000  # beyond this a first snapshot takes too long to be worth it
GIT_TIMEOUT = 300.0


class CheckpointError(Exception):
    """A snapshot or restore did not complete; the message says what failed."""


@dataclass(frozen=True)
class Staged:
    """The workspace as a git tree, and what was left out of it."""

    tree: str
    too_big: tuple[str, ...] = ()
    nested: tuple[str, ...] = ()


class ShadowRepo:
    def __init__(self, git_dir: Path, work_tree: Path, max_bytes: int = 5_000_000):
        self.git_dir = Path(os.path.abspath(git_dir))
        self.work_tree = Path(os.path.realpath(work_tree))
        self.max_bytes = max_bytes
        self.env = {
            "GIT_INDEX_FILE": str(self.git_dir / "loop-index"),  # private: never the user's index
            "GIT_OBJECT_DIRECTORY": str(self.git_dir / "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": "",
            "GIT_COMMON_DIR": str(self.git_dir),
            "GIT_CONFIG_GLOBAL": os.devnull,  # no user hooks, signing, fsmonitor or excludes
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_LITERAL_PATHSPECS": "1",  # a file named `*` is a file, not a glob
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": "loop", "GIT_AUTHOR_EMAIL": "loop@localhost",
            "GIT_COMMITTER_NAME": "loop", "GIT_COMMITTER_EMAIL": "loop@localhost",
        }

    @property
    def exists(self) -> bool:
        return (self.git_dir / "HEAD").is_file()

    def git(self, *args: str, stdin: bytes | BinaryIO | None = None, strip: bool = True) -> str:
        """Run one git command on the shadow repository; raises CheckpointError when it fails."""
        import git  # GitPython; imported late because it looks for the git binary at import

        cmd = ["git", f"--git-dir={self.git_dir}", f"--work-tree={self.work_tree}", *args]
        try:
            with tempfile.TemporaryFile() as tmp:
                feed = stdin
                if isinstance(stdin, bytes):
                    tmp.write(stdin)
                    tmp.seek(0)
                    feed = tmp
                out = git.Git(str(self.work_tree)).execute(
                    cmd, istream=feed, env=self.env, strip_newline_in_stdout=strip,
                    kill_after_timeout=GIT_TIMEOUT,
                )
        except git.GitCommandError as exc:
            detail = (exc.stderr or str(exc)).strip().splitlines()
            raise CheckpointError(f"git {args[0]} failed: {detail[-1] if detail else exc}") from None
        except OSError as exc:
            raise CheckpointError(f"cannot run git: {exc}") from None
        return str(out)

    def init(self) -> None:
        """Create the shadow repository (once); no template, so no sample hooks."""
        if self.exists:
            return
        try:
            self.git_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CheckpointError(f"cannot create {self.git_dir}: {exc.strerror or exc}") from None
        self.git("init", "--quiet", "--template=")
        self.git("symbolic-ref", "HEAD", REF)
        for key, value in [("core.autocrlf", "false"), ("core.quotePath", "false"), ("core.untrackedCache", "true"), ("gc.auto", "0"),
                           ("core.hooksPath", os.devnull), ("commit.gpgSign", "false")]:
            self.git("config", key, value)
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "exclude").write_text(".git\n", encoding="utf-8")
        home = Path(os.path.realpath(self.git_dir.parent.parent))  # $LOOP_HOME, when -C is a parent of it
        if home.is_relative_to(self.work_tree) and home != self.work_tree:
            self.exclude((str(home.relative_to(self.work_tree)) + "/",))

    def head(self) -> str | None:
        """The newest checkpoint commit, or None before the first one."""
        out = self.git("for-each-ref", "--format=%(objectname)", REF)
        return out or None

    def changed_paths(self) -> list[str]:
        """Paths whose state may differ from the private index: modified, deleted, untracked (not ignored)."""
        out = self.git("ls-files", "-z", "--modified", "--deleted", "--others", "--exclude-standard", strip=False)
        return list(dict.fromkeys(p for p in out.split("\0") if p))

    def stage(self) -> Staged:
        """Bring the private index up to the workspace and write it as a tree."""
        paths = self.changed_paths()
        if len(paths) > MAX_FILES:
            raise CheckpointError(f"the workspace has more than {MAX_FILES} files to snapshot")
        nested = tuple(p for p in paths if p.endswith("/"))  # git shows a nested repository as `dir/`
        if nested:
            self.exclude(nested)
        update, too_big, gone = [], [], []
        real_dirs: dict[str, bool] = {}
        for p in paths:
            if p.endswith("/"):
                continue
            try:
                size = os.lstat(self.work_tree / p).st_size
            except OSError:
                gone.append(p)
                continue
            if not self.plain_dir(os.path.dirname(p), real_dirs):
                gone.append(p)  # now behind a symlink: git cannot hold it, so the old entry goes
            else:
                (too_big if size > self.max_bytes else update).append(p)
        first = not Path(self.env["GIT_INDEX_FILE"]).exists()
        if gone or too_big:  # too big: left out, also when an earlier, smaller version was in a checkpoint
            self.git("update-index", "--force-remove", "-z", "--stdin", stdin=nul_join(gone + too_big))
        if first and len(update) >= BULK:
            self.bulk_add(update)
        elif update:
            self.git("update-index", "--add", "--replace", "-z", "--stdin", stdin=nul_join(update))
        tree = self.git("write-tree")
        if too_big:  # remembered, so that a restore of this tree does not take them for added files
            self.left_out_file(tree).parent.mkdir(exist_ok=True)
            self.left_out_file(tree).write_bytes(nul_join(too_big))
        return Staged(tree, tuple(too_big), nested)

    def bulk_add(self, paths: list[str]) -> None:
        """The first snapshot of a big tree: all blobs into one pack (fast-import), then the index.

        Much faster than one loose object per file; `--refresh` then records stat data so that
        later snapshots only look at what changed.
        """
        entries: list[tuple[str, str]] = []
        with tempfile.TemporaryFile() as feed:
            for p in paths:
                full = self.work_tree / p
                try:
                    st = os.lstat(full)
                    data = os.fsencode(os.readlink(full)) if stat.S_ISLNK(st.st_mode) else full.read_bytes()
                except OSError:
                    continue  # vanished meanwhile: not in this snapshot
                mode = "120000" if stat.S_ISLNK(st.st_mode) else "100755" if st.st_mode & 0o100 else "100644"
                entries.append((mode, p))
                feed.write(b"blob\nmark :%d\ndata %d\n" % (len(entries), len(data)) + data + b"\n")
            feed.seek(0)
            marks = self.git_dir / "loop-marks"
            self.git("fast-import", "--quiet", f"--export-marks={marks}", stdin=feed)
        shas = dict(line.split(" ", 1) for line in marks.read_text().splitlines())
        marks.unlink()
        info = b"".join(f"{mode} {shas[f':{i}']}\t".encode() + os.fsencode(p) + b"\0"
                        for i, (mode, p) in enumerate(entries, 1))
        self.git("update-index", "-z", "--index-info", stdin=info)
        self.git("update-index", "-q", "--refresh")

    def plain_dir(self, rel: str, seen: dict[str, bool]) -> bool:
        """Whether directory `rel` of the workspace is reached without passing a symlink."""
        if rel not in seen:
            full = os.path.join(self.work_tree, rel) if rel else str(self.work_tree)
            seen[rel] = os.path.realpath(full) == os.path.normpath(full)
        return seen[rel]

    def left_out_file(self, tree: str) -> Path:
        return self.git_dir / "loop-left-out" / tree

    def left_out(self, tree: str) -> set[str]:
        """Paths that existed but were too big when `tree` was staged."""
        try:
            data = self.left_out_file(tree).read_bytes()
        except OSError:
            return set()
        return {os.fsdecode(p) for p in data.split(b"\0") if p}

    def exclude(self, paths: tuple[str, ...]) -> None:
        """Leave these directories out of every later snapshot (shadow repository's info/exclude)."""
        with (self.git_dir / "info" / "exclude").open("a", encoding="utf-8") as f:
            for p in paths:
                f.write("/" + escape_pattern(p) + "\n")

    def commit(self, tree: str, message: str, parent: str | None) -> str:
        """A commit of `tree` on top of `parent`; moves the checkpoint ref only if it still is `parent`."""
        args = ["commit-tree", tree, "--no-gpg-sign", "-F", "-"]
        if parent:
            args[2:2] = ["-p", parent]
        sha = self.git(*args, stdin=message.encode("utf-8"))
        self.git("update-ref", REF, sha, parent or "0" * 40)
        return sha

    def tree_of(self, commit: str) -> str:
        return self.git("rev-parse", f"{commit}^{{tree}}")

    def restore(self, target: str, current: str) -> None:
        """Make the workspace match commit `target`, given that it now matches tree `current`.

        Files added since are deleted, changed or deleted files are written back; files the
        snapshots never held (ignored, too big, nested repositories) are not touched. Checked afterwards.
        """
        target_tree = self.tree_of(target)
        keep = self.left_out(target_tree)
        out = self.git("diff-tree", "-r", "-z", "--no-renames", "--name-status", current, target_tree, strip=False)
        fields = [f for f in out.split("\0") if f]
        changes = list(zip(fields[::2], fields[1::2], strict=False))
        for status, path in changes:
            if status == "D" and path not in keep:
                self.delete(path)
        write = [path for status, path in changes if status != "D"]
        if write:
            self.git("checkout", target, "--pathspec-from-file=-", "--pathspec-file-nul", stdin=nul_join(write))
        after = self.stage().tree
        out = self.git("diff-tree", "-r", "-z", "--name-only", after, target_tree, strip=False)
        differ = [p for p in out.split("\0") if p and p not in keep]
        if differ:
            raise CheckpointError(f"the restore is incomplete; these paths still differ: {', '.join(differ[:5])}")

    def delete(self, path: str) -> None:
        """Remove a file that a checkpoint does not have, then its directories if they became empty."""
        parts = Path(path).parts
        if ".git" in parts or ".." in parts or Path(path).is_absolute():
            raise CheckpointError(f"refusing to delete {path!r}")
        full = self.work_tree / path
        real_parent = os.path.realpath(full.parent)
        if real_parent != str(self.work_tree) and not real_parent.startswith(str(self.work_tree) + os.sep):
            raise CheckpointError(f"refusing to delete {path!r}: its directory leads outside the workspace")
        try:
            full.unlink(missing_ok=True)
        except OSError as exc:
            raise CheckpointError(f"cannot delete {path}: {exc.strerror or exc}") from None
        parent = full.parent
        while parent != self.work_tree and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent


def nul_join(paths: list[str]) -> bytes:
    return b"".join(os.fsencode(p) + b"\0" for p in paths)


def escape_pattern(path: str) -> str:
    """A gitignore pattern that matches exactly this path."""
    return "".join("\\" + ch if ch in "\\*?[]! #" else ch for ch in path)
