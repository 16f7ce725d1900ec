"""The workspace: the one directory every file tool is confined to, and what the agent has read in it.

Confinement holds against a workspace that changes under us (a shell command, a process it left
behind): a path is resolved component by component, following a symlink only while it stays
inside (at most MAX_HOPS of them), and what was resolved is then opened beneath a descriptor of
the root with O_NOFOLLOW on every component. A link swapped in after the check makes the open
fail instead of leaving the workspace. Writes go to a new file in the same directory, created
beside the old one, and are renamed over it, so they never go through a link to elsewhere.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopagent.errors import ToolError
from loopagent.tools.protected import protected_name, protection

MAX_HOPS = 40  # symlinks followed while resolving one path, as the kernel allows
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused after fstat anyway.
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
EDITOR_TOOLS = ("read_file", "write_file", "edit_file")  # grep and list_files read the disk


class Escape(Exception):
    """A path (or a symlink on its way) that leaves the workspace; carries where it led."""

    def __init__(self, target: str):
        super().__init__(target)
        self.target = target


@dataclass
class Workspace:
    root: Path
    # real path -> sha256 of the bytes at the last read or write. A content hash, not mtime/size:
    # two writes within one mtime tick with equal sizes must still count as a change.
    reads: dict[Path, str] = field(default_factory=dict)
    # Directories the file tools never write into even inside the workspace ($LOOP_HOME).
    protected: tuple[Path, ...] = ()
    # The editor's buffers (loop acp with a client's fs methods), for the file tools (EDITOR_TOOLS) after every
    # check here: `read(path) -> bytes | None` and `write(path, data) -> bool` (None, False: the disk's).
    editor: Any = None

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))
        self.protected = tuple(Path(os.path.realpath(p)) for p in self.protected)

    # ---- resolving ---------------------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """The real path of `path` inside the workspace; raises ToolError when it leaves it.

        Symlinks are resolved (parents included) before the check, so a link that
        points outside is refused for reading and for writing alike; a path that does
        not exist yet resolves through its deepest existing parent.
        """
        if not path or "\x00" in path:
            raise ToolError("path is empty or contains a NUL byte; give a path relative to the workspace")
        try:
            parts = self.real_parts(path)
        except Escape as exc:
            raise ToolError(
                f"path {path!r} is outside the workspace (it resolves to {self.shown_target(path, exc)}); "
                "use a path relative to the workspace root"
            ) from None
        return self.root.joinpath(*parts)

    def shown_target(self, path: str, exc: Escape) -> str:
        """Where an escaping path leads, for the message (the whole path resolved, when that works)."""
        raw = os.path.expanduser(path) if path.startswith("~") else path
        try:
            return os.path.realpath(self.root / raw)
        except (OSError, ValueError):
            return exc.target

    def real_rel(self, path: str) -> str | None:
        """The workspace-relative real path of `path` (non-existing tail kept), or None when it leaves."""
        if not path or "\x00" in path:
            return None
        try:
            return self.rel(self.root.joinpath(*self.real_parts(path)))
        except Escape:
            return None
        except ToolError:
            # Not resolvable (a link loop, a file used as a directory): the tool will fail on it; the
            # policy judges the lexical path, which cannot leave the root once normalised inside it.
            try:
                lexical = os.path.normpath("/".join(self.components(path)))
            except Escape:
                return None
            return None if lexical == ".." or lexical.startswith("../") else lexical

    def real_parts(self, path: str) -> list[str]:
        """The real components of `path` below the root; Escape when a step leaves the root."""
        pending = list(reversed(self.components(path)))
        parts: list[str] = []
        missing_from: int | None = None  # parts from this index on do not exist (yet)
        last_is_file, hops = False, 0
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if last_is_file:
                raise ToolError(f"{'/'.join(parts)} is a file, not a directory")
            if name == "..":
                if not parts:
                    raise Escape(str(self.root.parent))
                parts.pop()
                if missing_from is not None and len(parts) <= missing_from:
                    missing_from = None
                continue
            if missing_from is not None:
                parts.append(name)
                continue
            full = self.root.joinpath(*parts, name)
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                missing_from = len(parts)
                parts.append(name)
                continue
            except OSError as exc:
                raise ToolError(f"cannot resolve {self.rel(full)}: {exc.strerror}") from None
            if stat.S_ISLNK(st.st_mode):
                hops += 1
                if hops > MAX_HOPS:
                    raise ToolError(f"too many levels of symbolic links at {self.rel(full)}")
                try:
                    target = os.readlink(full)
                except OSError as exc:  # replaced since the lstat a moment ago
                    raise ToolError(f"cannot resolve {self.rel(full)}: {exc.strerror}; try again") from None
                if os.path.isabs(target):  # from the root on: start again there
                    parts, target = [], "/".join(self.below_root(target))
                pending.extend(reversed(target.split("/")))  # relative: from the link's directory
                continue
            last_is_file = not stat.S_ISDIR(st.st_mode)
            parts.append(name)
        return parts

    def components(self, path: str) -> list[str]:
        """The components of a model-supplied path relative to the root (`~` expanded)."""
        raw = os.path.expanduser(path) if path.startswith("~") else path
        return self.below_root(raw) if os.path.isabs(raw) else raw.split("/")

    def below_root(self, absolute: str) -> list[str]:
        """The components of an absolute path below the root; Escape when it is not under it."""
        root = str(self.root)
        for candidate in (absolute, os.path.realpath(absolute)):
            # The literal form keeps `..` and links below the root for real_parts to judge; the
            # real form accepts a spelling of the root through a link (the workspace given as one).
            if candidate == root or root == "/":
                return candidate.split("/")[1:] if root == "/" else []
            if candidate.startswith(root + "/"):
                return candidate[len(root) + 1 :].split("/")
        raise Escape(os.path.realpath(absolute))

    def contains(self, real: Path) -> bool:
        return real == self.root or self.root in real.parents

    def rel(self, path: Path) -> str:
        """`path` as shown to the model and the user: relative to the workspace."""
        try:
            return path.relative_to(self.root).as_posix() or "."
        except ValueError:
            return str(path)

    def parts_of(self, real: Path) -> tuple[str, ...]:
        """The components below the root of a path `resolve` returned."""
        if not self.contains(real):
            raise ToolError(f"{real} is outside the workspace")
        return real.relative_to(self.root).parts

    # ---- protection --------------------------------------------------------------------------

    def resolve_writable(self, path: str) -> Path:
        """`resolve` for a write: also ToolError for protected paths (.git, .loop, $LOOP_HOME)."""
        real = self.resolve(path)
        literal = os.path.normpath("/".join(self.components(path))).split("/")
        why = protection(self, real) or protected_name(literal, self.rel(real))
        if why:
            raise ToolError(why)
        return real

    # ---- opening -----------------------------------------------------------------------------

    @contextmanager
    def dir_fd(self, parts: tuple[str, ...], create: bool = False) -> Iterator[int]:
        """A descriptor of the directory root/parts, each component opened with O_NOFOLLOW."""
        fd = os.open(self.root, DIR_FLAGS)
        try:
            for name in parts:
                try:
                    next_fd = os.open(name, DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    with suppress(FileExistsError):
                        os.mkdir(name, dir_fd=fd)
                    next_fd = os.open(name, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = next_fd
            yield fd
        finally:
            os.close(fd)

    def lstat(self, real: Path) -> os.stat_result | None:
        """The stat of `real` itself (a link is not followed), or None when it does not exist."""
        parts = self.parts_of(real)
        if not parts:
            return os.stat(self.root)
        try:
            with self.dir_fd(parts[:-1]) as dfd:
                return os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self.os_error("cannot read", real, exc) from None

    def read_bytes(self, path: Path, *, allow_links: bool = False, tool: str = "read_file",
                   most: int | None = None) -> bytes:
        """The bytes of a regular file; ToolError for directories, missing, special and hard-linked files."""
        data = self.read_if_exists(path, allow_links=allow_links, tool=tool, most=most)
        if data is None:
            raise ToolError(f"{self.rel(path)} does not exist{self.suggest(path)}")
        return data

    def read_if_exists(self, path: Path, *, allow_links: bool = False, tool: str = "read_file",
                       most: int | None = None) -> bytes | None:
        """Like read_bytes, but None when the file does not exist; ToolError past `most` bytes."""
        with self.open_regular(path, allow_links=allow_links, tool=tool) as fd:
            if fd is None:
                return None
            size = os.fstat(fd).st_size
            if most is not None and size > most:
                raise ToolError(f"{self.rel(path)} is {size} bytes; {tool} handles files up to {most} bytes")
            return read_all(fd, size)

    @contextmanager
    def open_regular(self, path: Path, *, allow_links: bool = False, tool: str = "read_file") -> Iterator[int | None]:
        """A read descriptor of the regular file `path` (None: it does not exist), opened race-free.

        ToolError for directories, special and hard-linked files; an OSError while reading becomes one too.
        """
        rel, parts = self.rel(path), self.parts_of(path)
        if not parts:
            raise ToolError(f"{rel} is a directory; use list_files to see what it contains")
        try:
            with self.dir_fd(parts[:-1]) as dfd:
                fd = os.open(parts[-1], READ_FLAGS, dir_fd=dfd)
        except FileNotFoundError:
            yield None
            return
        except OSError as exc:
            raise self.os_error("cannot read", path, exc) from None
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise ToolError(f"{rel} is a directory; use list_files to see what it contains")
            if not stat.S_ISREG(st.st_mode):
                raise ToolError(f"{rel} is not a regular file (a device, socket or pipe); it cannot be read")
            if st.st_nlink > 1 and not allow_links:
                raise hard_link_error(rel, st.st_nlink, tool)
            buffer = self.editor.read(path) if self.editor is not None and tool in EDITOR_TOOLS else None
            if buffer is not None:  # the buffer the person sees, maybe unsaved
                with buffer_fd(buffer) as memfd:
                    yield memfd
                return
            yield fd
        except OSError as exc:
            raise self.os_error("cannot read", path, exc) from None
        finally:
            os.close(fd)

    def write_bytes(self, path: Path, data: bytes, *, allow_links: bool = False, tool: str = "write_file") -> None:
        """Replace (or create) the file atomically: a temporary file beside it, fsync, rename.

        The old file's permission bits are kept; its other hard links are not (the rename gives the
        name a new inode), so a write never changes a file through a link to elsewhere. On any
        failure the temporary file is removed and the old file is untouched.
        """
        why = protection(self, path)
        if why:
            raise ToolError(why)
        parts = self.parts_of(path)
        if not parts:
            raise ToolError(f"{self.rel(path)} is a directory; give a file path")
        if self.editor is not None and tool in EDITOR_TOOLS and self.editor.write(path, data):
            return
        try:
            with self.dir_fd(parts[:-1], create=True) as dfd:
                self.replace_in(dfd, parts[-1], self.rel(path), data, allow_links, tool)
        except OSError as exc:
            raise self.os_error("cannot write", path, exc) from None

    def replace_in(self, dfd: int, name: str, rel: str, data: bytes, allow_links: bool, tool: str) -> None:
        """Replace `name` in the directory `dfd` by a new file holding `data`."""
        try:
            old = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        if old is not None and not stat.S_ISREG(old.st_mode):
            raise ToolError(f"{rel} is not a regular file (it changed while being written); try again")
        if old is not None and old.st_nlink > 1 and not allow_links:
            raise hard_link_error(rel, old.st_nlink, tool)
        temp = f".{name[:200]}.{secrets.token_hex(6)}.loop-tmp"
        # A new file gets 0o666 minus the umask, as open() would give it; an old one keeps its mode.
        fd = os.open(temp, TEMP_FLAGS, 0o600 if old else 0o666, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                if old is not None:
                    keep_owner_and_mode(f.fileno(), old)
                os.fsync(f.fileno())
            os.replace(temp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with suppress(OSError):
                os.unlink(temp, dir_fd=dfd)
            raise
        with suppress(OSError):
            os.fsync(dfd)  # the rename itself survives a crash

    def scandir(self, parts: tuple[str, ...]) -> list[tuple[str, str]]:
        """(name, kind) of the entries of root/parts, kind one of dir, file, link, other; [] on errors."""
        try:
            with self.dir_fd(parts) as dfd, os.scandir(dfd) as it:
                return [(e.name, entry_kind(e)) for e in it]
        except OSError:
            return []

    def os_error(self, doing: str, path: Path, exc: OSError) -> ToolError:
        rel = self.rel(path)
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            # Resolved a moment ago without links: something swapped one in since.
            return ToolError(f"{doing} {rel}: its path changed while it was opened (a symbolic link "
                             "appeared in it); loop does not follow it. Try again")
        return ToolError(f"{doing} {rel}: {exc.strerror}")

    # ---- what the agent has seen ---------------------------------------------------------------

    def suggest(self, path: Path) -> str:
        """A hint naming files with a similar name in the same directory, or ''."""
        import difflib

        try:
            names = [p.name for p in path.parent.iterdir()] if path.parent.is_dir() else []
        except OSError:
            return ""
        close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
        if not close:
            return ""
        return "; did you mean " + ", ".join(self.rel(path.parent / n) for n in close) + "?"

    def record_read(self, path: Path, data: bytes | None = None) -> None:
        """Remember the content the agent has seen, for the stale-edit check."""
        if data is None:
            data = self.read_bytes(path, allow_links=True)
        self.reads[path] = hashlib.sha256(data).hexdigest()

    def check_fresh(self, path: Path, data: bytes) -> None:
        """Refuse an edit of a file not read in this session, or whose bytes changed since."""
        seen = self.reads.get(path)
        if seen is None:
            raise ToolError(f"{self.rel(path)} has not been read in this session; read_file it before editing")
        if hashlib.sha256(data).hexdigest() != seen:
            raise ToolError(
                f"{self.rel(path)} changed on disk since it was last read; read_file it again before editing"
            )


@contextmanager
def buffer_fd(data: bytes) -> Iterator[int]:
    """A readable descriptor holding `data`, read as a file is (fstat gives its size)."""
    fd = os.memfd_create("loop-buffer", os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)


def hard_link_error(rel: str, links: int, tool: str) -> ToolError:
    return ToolError(
        f"{rel} has {links} hard links, and {tool} refuses hard-linked files: another name of the same "
        "file can be outside the workspace, so reading or writing it could reach a file loop must not "
        f"touch. If the user trusts it, they can allow it in their config: \"allow\": [\"{tool}({rel})\"]"
    )


def read_all(fd: int, size: int) -> bytes:
    """Everything left to read from `fd` (`size`: the expected length, a hint)."""
    chunks = []
    while chunk := os.read(fd, max(size + 1, 1 << 16)):
        chunks.append(chunk)
    return b"".join(chunks)


def keep_owner_and_mode(fd: int, old: os.stat_result) -> None:
    """Give the new file the old one's permission bits (and owner, when we may)."""
    if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
        with suppress(OSError):
            os.fchown(fd, old.st_uid, old.st_gid)
    os.fchmod(fd, stat.S_IMODE(old.st_mode))


def entry_kind(entry: os.DirEntry) -> str:
    if entry.is_symlink():
        return "link"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    return "file" if entry.is_file(follow_symlinks=False) else "other"
