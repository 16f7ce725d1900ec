"""The file system around a workspace as the sandbox must treat it: what to pin, protect and hide.

Read from disk just before each command, because a command may create what the next one must
not touch. Everything here is a fact about paths; turning it into bwrap options is bwrap.py.
Which git dirs a command can reach and what in them is guarded is gitdirs.py.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass

from loopagent.sandbox.gitdirs import COMMONDIR_STUB, contains, guard_dir, guard_repositories
from loopagent.sandbox.spec import SandboxSpec, under

MAX_SOCKETS = 256  # host sockets hidden one by one; beyond that a machine is not one we know
PATH_FIELD = re.compile(r" (/[^\n]*)")


@dataclass(frozen=True)
class Layout:
    """Absolute paths; bwrap.py mounts the walls shallow paths first, each list in its order."""

    writable: tuple[str, ...] = ()  # bound writable: extra dirs, a worktree's git dirs outside the workspace
    pinned: tuple[str, ...] = ()  # bound onto themselves so they cannot be renamed away (git dirs)
    protect: tuple[str, ...] = ()  # existing files and dirs re-bound read-only
    block_dirs: tuple[str, ...] = ()  # missing protected dirs: an empty read-only dir there
    block_files: tuple[str, ...] = ()  # missing protected files: /dev/null there, so none can be made
    stubs: tuple[str, ...] = ()  # missing commondir files: loop writes "." there, bound read-only
    hide_dirs: tuple[str, ...] = ()  # existing secret stores: an empty read-only dir over them
    hide_files: tuple[str, ...] = ()  # existing secret files and host sockets: /dev/null over them

    def mount_points(self) -> tuple[str, ...]:
        """Paths made on the host (through the writable workspace) to mount over, removed after the call."""
        return self.block_dirs + self.block_files + self.stubs


def survey(spec: SandboxSpec) -> Layout:
    """The layout of `spec.workspace` as it is on disk now."""
    ws = spec.workspace
    parts: dict[str, list[str]] = {k: [] for k in ("writable", "pinned", "protect", "block_dirs", "block_files",
                                                   "stubs")}
    if spec.mode == "workspace-write":
        parts["writable"] += [d for d in spec.writable if os.path.isdir(d)]
        guard_dir(os.path.join(ws, ".loop"), parts)
        guard_repositories(ws, parts)
        parts["pinned"] = [p for p in parts["pinned"] if p not in parts["writable"]]  # bound once
    # Never hide what holds a path the command needs: hiding an ancestor would hide the workspace itself.
    needed = (ws, *parts["writable"], *spec.through_tmp)
    hide_dirs, hide_files = [], []
    for path in spec.hidden:
        if any(contains(path, p) for p in needed) or under(path, spec.private) or not os.path.lexists(path):
            continue
        (hide_dirs if os.path.isdir(path) else hide_files).append(path)
    walled, shown = ("/tmp", *spec.private, *hide_dirs), (*parts["writable"], *spec.through_tmp)
    skip = tuple(d for d in walled if not any(contains(d, p) for p in shown))
    for sock in host_sockets(skip=skip):  # the workspace's own are the command's
        if not contains(ws, sock) and (not any(contains(d, sock) for d in walled)
                                       or any(contains(d, sock) for d in shown)):
            hide_files.append(sock)
    return Layout(**{k: tuple(dict.fromkeys(v)) for k, v in parts.items()},
                  hide_dirs=tuple(hide_dirs), hide_files=tuple(dict.fromkeys(hide_files)))


def host_sockets(table: str = "/proc/net/unix", skip: tuple[str, ...] = ()) -> list[str]:
    """Path sockets bound on this host (listening or not) that exist as sockets now, resolved; those
    named under a `skip` dir are left out early (a desktop lists hundreds of D-Bus clients under /run).

    A path socket is reached through the file system, whatever the network namespace; the table
    lists those of loop's own network namespace, which is the host's when loop runs on it.
    """
    try:
        with open(table, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return []
    # The fields before a path hold no "/": the first " /" of a line starts it. Unbound sockets have
    # no path; abstract ones (@name) belong to the network namespace and are gone without --network.
    named = dict.fromkeys(p for p in PATH_FIELD.findall(text) if not under(p, skip))
    found: dict[str, None] = {}
    for raw in named:
        path = os.path.join(os.path.realpath(os.path.dirname(raw)), os.path.basename(raw))
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                found[path] = None
        except OSError:
            continue
        if len(found) >= MAX_SOCKETS:
            break
    return list(found)


def place_stubs(layout: Layout) -> None:
    """Write the commondir stubs the layout binds (git refuses an empty commondir; "." names the git dir itself)."""
    for path in layout.stubs:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except OSError:
            continue  # made meanwhile; bwrap binds what is there
        with os.fdopen(fd, "w") as f:
            f.write(COMMONDIR_STUB)


def remove_mount_points(paths: tuple[str, ...]) -> None:
    """Remove what bwrap and place_stubs made to mount over: empty dirs and files, and unchanged stubs."""
    for path in reversed(paths):
        try:
            info = os.lstat(path)
            if stat.S_ISDIR(info.st_mode):
                os.rmdir(path)  # only when empty: anything else was not ours
            elif stat.S_ISREG(info.st_mode) and (info.st_size == 0 or is_stub(path)):
                os.unlink(path)
        except OSError:
            pass


def is_stub(path: str) -> bool:
    if os.path.basename(path) != "commondir":
        return False
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read(16) == COMMONDIR_STUB
