"""Every process a shell call starts dies with the call.

The command runs in its own session; when it ends, the session, the leader's descendants and
every orphan of the call are killed. An orphan (`setsid cmd &` whose shell then exits) would
be reparented to init and escape both; so loop makes itself a child subreaper: orphans of its
descendants are reparented to loop, and any child of loop that was not there when the call
started belongs to the call. That holds because loop runs no other process while a shell call
runs (only read-only tools run concurrently, and never with a shell call). Sandboxed calls are
contained twice: their PID namespace dies with its init.
"""

from __future__ import annotations

import os
import signal
import time

PR_SET_CHILD_SUBREAPER = 36
_subreaper: list[bool] = []


def become_subreaper() -> bool:
    """Make orphans of loop's descendants loop's children (Linux); once per process. False when refused."""
    if not _subreaper:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            _subreaper.append(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
        except (OSError, AttributeError):
            _subreaper.append(False)
    return _subreaper[0]


def children() -> set[int]:
    """Pids whose parent is loop, now."""
    me, kids = os.getpid(), set()
    try:
        tasks = os.listdir(f"/proc/{me}/task")
        for tid in tasks:
            with open(f"/proc/{me}/task/{tid}/children") as f:
                kids.update(int(p) for p in f.read().split())
        return kids
    except (OSError, ValueError):
        return {pid for pid, (_s, ppid, _g, _sid) in processes().items() if ppid == me}


def kill_call(sid: int, before: set[int]) -> None:
    """SIGKILL the call led by `sid`: its session, its leader's descendants, and loop's children not in `before`.

    Waits (bounded) until they are gone, and reaps the adopted orphans (the leader is left to its Popen).
    """
    table = processes()
    me = os.getpid()
    adopted = {pid for pid, f in table.items() if f[1] == me and pid not in before and pid != sid}
    doomed = {pid for pid, f in table.items() if f[3] == sid and f[0] != "Z"}
    doomed |= descendants(table, {sid} | adopted) | {p for p in adopted if table[p][0] != "Z"}
    try:
        os.killpg(sid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    signal_all(doomed - {me})
    # A process forked just before its parent was killed is adopted by loop a moment later.
    for _ in range(8):
        late = children() - before - adopted - {sid}
        if not late:
            break
        adopted |= late
        late |= descendants(processes(), late)
        doomed |= late
        signal_all(late - {me})
    # Death after SIGKILL is quick but asynchronous; wait (bounded) so "killed" means gone.
    deadline, delay = time.monotonic() + 2.0, 0.0005
    pending = sorted(doomed)
    while pending and time.monotonic() < deadline:
        reap(adopted)
        pending = [pid for pid in pending if alive(pid)]
        if pending:
            time.sleep(delay)
            delay = min(delay * 2, 0.01)
    reap(adopted)


def signal_all(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def reap(pids: set[int]) -> None:
    """Collect the exit status of adopted orphans, so they do not stay zombies of loop."""
    for pid in list(pids):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            pids.discard(pid)


def descendants(table: dict[int, tuple[str, int, int, int]], roots: set[int]) -> set[int]:
    """Live processes below any of `roots`."""
    found: set[int] = set()
    for pid in table:
        ancestor, seen = table[pid][1], 0
        while ancestor and seen < 64:
            if ancestor in roots:
                if table[pid][0] != "Z":
                    found.add(pid)
                break
            ancestor, seen = table.get(ancestor, ("", 0, 0, 0))[1], seen + 1
    return found


def processes() -> dict[int, tuple[str, int, int, int]]:
    """(state, ppid, pgrp, session) of every process (Linux /proc; {} elsewhere)."""
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    for name in names:
        if name.isdigit():
            fields = proc_stat(int(name))
            if fields is not None:
                table[int(name)] = fields
    return table


def proc_stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, ppid, pgrp, session) from /proc/<pid>/stat, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("ascii", errors="replace")
    except OSError:
        return None
    # The command name is in parentheses and may itself contain spaces or parentheses.
    rest = raw[raw.rfind(")") + 2 :].split()
    return rest[0], int(rest[1]), int(rest[2]), int(rest[3])


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    fields = proc_stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")
