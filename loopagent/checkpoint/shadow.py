"""The shadow repository: git plumbing on a separate git directory and a private index.

Every command runs as `git --git-dir=<shadow> --work-tree=<workspace>` with its own
index file and without the user's global/system config, so the workspace's own `.git`
(branches, index, stash, hooks) is never read or written. Git never adds a path with a
`.git` component; nested repositories are left out and reported.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

REF = "refs/heads/checkpoints"
BULK = 1000  # a first snapshot of at least this many files goes through fast-import
MAX_FILES = 200_000  # beyond this a first snapshot takes too long to be worth it
GIT_TIMEOUT = 300.0
RAW_BYTES = "* -text -eol -filter -ident\n"
# Config that runs a program, pinned off on git's command line (GIT_CONFIG_COUNT wins over every config file).
# Global and system config are not read and the shadow's own config lives in $LOOP_HOME, which the sandbox
# hides; this still holds where $LOOP_HOME is writable (--sandbox off, a sandbox_writable entry). An empty
# core.fsmonitor is off for every git version (older ones take the value as a program to run).
PINNED = (("core.fsmonitor", ""), ("core.hooksPath", os.devnull), ("log.showSignature", "false"),
          ("commit.gpgSign", "false"), ("core.pager", "cat"), ("core.sshCommand", "false"))


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
            **pinned_config(),
        }

    @property
    def exists(self) -> bool:
        return (self.git_dir / "HEAD").is_file() and (self.git_dir / "objects").is_dir()

    def git(self, *args: str, stdin: bytes | BinaryIO | None = None, strip: bool = True, ok: int = 0,
            literal: bool = True) -> str:
        """Run one git command on the shadow repository; raises CheckpointError when it fails (an exit
        status up to `ok` is success: `check-ignore` exits 1 when nothing is ignored)."""
        os.environ.setdefault("GIT_PYTHON_GIT_EXECUTABLE", git_program())  # its import runs `git version`
        import git  # GitPython; imported late because it looks for the git binary at import

        cmd = [git_program(), f"--git-dir={self.git_dir}", f"--work-tree={self.work_tree}", *args]
        try:
            with tempfile.TemporaryFile() as tmp:
                feed = stdin
                if isinstance(stdin, bytes):
                    tmp.write(stdin)
                    tmp.seek(0)
                    feed = tmp
                status, out, err = git.Git(str(self.work_tree)).execute(
                    cmd, istream=feed, env=self.env if literal else {**self.env, "GIT_LITERAL_PATHSPECS": "0"},
                    strip_newline_in_stdout=strip,
                    kill_after_timeout=GIT_TIMEOUT, with_exceptions=False, with_extended_output=True,
                )
        except git.GitCommandError as exc:
            status, err = exc.status, str(exc.stderr or exc)
        except OSError as exc:
            raise CheckpointError(f"cannot run git: {exc}") from None
        if status not in range(ok + 1):
            detail = str(err).strip().splitlines() or [f"exit status {status}"]
            # git's last line may be "remove the file manually": say which file, from the line naming it.
            named = [line for line in detail if ".lock" in line]
            raise CheckpointError(f"git {args[0]} failed: {(named or detail)[-1]}")
        return str(out)

    def init(self) -> None:
        """Create the shadow repository (once), whole or not at all: built in a temporary directory and
        renamed into place, so a kill half-way leaves no half-made repository. One found without HEAD
        or objects (left by an older loop) is set aside and built again."""
        if self.exists:
            self.attributes()
            return
        parent = self.git_dir.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
            for stale in parent.glob(f".{self.git_dir.name}.new-*"):  # a build a kill cut short (we hold the lock)
                shutil.rmtree(stale, ignore_errors=True)
            if self.git_dir.exists():
                os.rename(self.git_dir, parent / f".{self.git_dir.name}.broken-{os.getpid()}-{time.time_ns()}")
            building = ShadowRepo(Path(tempfile.mkdtemp(dir=parent, prefix=f".{self.git_dir.name}.new-")),
                                  self.work_tree, self.max_bytes)
        except OSError as exc:
            raise CheckpointError(f"cannot create {self.git_dir}: {exc.strerror or exc}") from None
        building.build(self.git_dir)
        try:
            os.rename(building.git_dir, self.git_dir)
        except OSError as exc:
            raise CheckpointError(f"cannot create {self.git_dir}: {exc.strerror or exc}") from None

    def build(self, final: Path) -> None:
        """Make a new shadow repository here (no template, so no sample hooks); `final` is where it will live."""
        self.git("init", "--quiet", "--template=")
        self.git("symbolic-ref", "HEAD", REF)
        for key, value in [("core.autocrlf", "false"), ("core.quotePath", "false"), ("core.untrackedCache", "true"), ("gc.auto", "0"),
                           ("core.hooksPath", os.devnull), ("commit.gpgSign", "false")]:
            self.git("config", key, value)
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "exclude").write_text(".git\n", encoding="utf-8")
        self.attributes()
        home = Path(os.path.realpath(final.parent.parent))  # $LOOP_HOME, when -C is a parent of it
        if home.is_relative_to(self.work_tree) and home != self.work_tree:
            self.exclude((str(home.relative_to(self.work_tree)) + "/",))

    def attributes(self) -> None:
        """Snapshots hold the bytes as they are: the user's `.gitattributes` (text=auto, filters) must not
        turn CRLF into LF on the way back. info/attributes wins over every file in the workspace."""
        path = self.git_dir / "info" / "attributes"
        try:
            if not path.is_file() or path.read_text(encoding="utf-8") != RAW_BYTES:
                path.parent.mkdir(exist_ok=True)
                path.write_text(RAW_BYTES, encoding="utf-8")
        except OSError as exc:
            raise CheckpointError(f"cannot write {path}: {exc.strerror or exc}") from None

    def head(self) -> str | None:
        """The newest checkpoint commit, or None before the first one."""
        out = self.git("for-each-ref", "--format=%(objectname)", REF)
        return out or None

    def changed_paths(self) -> list[str]:
        """Paths whose state may differ from the private index: modified, deleted, untracked (not ignored)."""
        out = self.git("ls-files", "-z", "--modified", "--deleted", "--others", "--exclude-standard", strip=False)
        return list(dict.fromkeys(p for p in out.split("\0") if p))

    def stage(self, dirs: bool = True) -> Staged:
        """Bring the private index up to the workspace and write it as a tree (`dirs`: and note its empty
        directories beside it, which only a tree that may be restored needs)."""
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
        if dirs and (empty := self.find_empty_dirs()):  # git holds no directories: remembered beside the tree
            self.side_file("loop-dirs", tree).parent.mkdir(exist_ok=True)
            self.side_file("loop-dirs", tree).write_bytes(nul_join(empty))
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
        return self.side_file("loop-left-out", tree)

    def side_file(self, kind: str, tree: str) -> Path:
        return self.git_dir / kind / tree

    def find_empty_dirs(self) -> list[str]:
        """Empty directories of the workspace (not ignored), as paths without a trailing slash."""
        out = self.git("ls-files", "-z", "--others", "--directory", "--exclude-standard", strip=False)
        found = []
        for p in out.split("\0"):
            full = self.work_tree / p
            if p.endswith("/") and not full.is_symlink() and full.is_dir() and not any(full.iterdir()):
                found.append(p.rstrip("/"))
        return found

    def empty_dirs(self, tree: str) -> set[str]:
        """The empty directories the workspace had when `tree` was staged."""
        try:
            data = self.side_file("loop-dirs", tree).read_bytes()
        except OSError:
            return set()
        return {os.fsdecode(p) for p in data.split(b"\0") if p}

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

    def export(self, commit: str, dest: Path) -> None:
        """Write the files of checkpoint `commit` (and its empty directories) into directory `dest`.

        Read-only on the shadow repository: `git archive` touches no index, ref or work tree, so a run
        taking checkpoints of the workspace meanwhile is not disturbed (`loop replay` uses this)."""
        import subprocess
        import tarfile

        from loopagent.tarball import extract

        cmd = [git_program(), f"--git-dir={self.git_dir}", "archive", "--format=tar", commit]
        try:
            with tempfile.TemporaryFile() as tar:
                done = subprocess.run(cmd, stdout=tar, stderr=subprocess.PIPE, env={**os.environ, **self.env},
                                      timeout=GIT_TIMEOUT, check=False)
                if done.returncode:
                    why = done.stderr.decode("utf-8", "replace").strip().splitlines() or [f"exit {done.returncode}"]
                    raise CheckpointError(f"git archive failed: {why[-1]}")
                tar.seek(0)
                with tarfile.open(fileobj=tar) as archive:
                    extract(archive, dest)  # our own commit: links are kept as links
            for d in self.empty_dirs(self.tree_of(commit)):
                os.makedirs(dest / d, exist_ok=True)
        except (OSError, subprocess.SubprocessError, tarfile.TarError) as exc:
            raise CheckpointError(f"cannot export checkpoint {commit[:8]}: {exc}") from None

    def restore(self, target: str, current: str) -> None:
        """Make the workspace match commit `target`, given that it now matches tree `current` (restore.py)."""
        from loopagent.checkpoint.restore import restore

        restore(self, target, current)


def pinned_config() -> dict[str, str]:
    """The environment that pins PINNED, and PATH without relative entries (git runs in the workspace);
    config from a `git -c` that started loop (GIT_CONFIG_PARAMETERS) is dropped with the user's files."""
    from loopagent.spawn import absolute_path

    env = {"GIT_CONFIG_COUNT": str(len(PINNED)), "GIT_CONFIG_PARAMETERS": "",
           "PATH": absolute_path(os.environ.get("PATH", os.defpath))}
    for i, (key, value) in enumerate(PINNED):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return env


def git_program() -> str:
    """git as found on PATH's absolute entries: an empty or `.` entry would find a `git` the model wrote."""
    if not _git:
        from loopagent.spawn import absolute_path

        _git.append(shutil.which("git", path=absolute_path(os.environ.get("PATH", os.defpath))) or "git")
    return _git[0]


_git: list[str] = []


def nul_join(paths: list[str]) -> bytes:
    return b"".join(os.fsencode(p) + b"\0" for p in paths)


def escape_pattern(path: str) -> str:
    """A gitignore pattern that matches exactly this path."""
    return "".join("\\" + ch if ch in "\\*?[]! #" else ch for ch in path)
