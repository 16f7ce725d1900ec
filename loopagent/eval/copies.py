"""The temporary directories runs work in, each marked with the process that made it, and the sweep that
removes those whose maker is gone: a SIGKILLed eval cannot remove its own.

The runs' processes die with the eval (parent-death signal, the sandbox); what they started outside
both (an unsandboxed setup's or shell call's background job) still carries the copy's path in its
environment (TAG), and the sweep ends it before removing the copy: a resumed eval must not run a task
while an old copy of it still runs.

A copy is `$TMPDIR/loop-eval-ID-XXXX/` holding `owner.json` (beside the run's `repo/` and `home/`, out of
the agent's reach). The maker is named by pid, the pid's start time and the boot, so a reused pid does
not keep a dead eval's copy alive, nor does a dead pid's copy get taken for a live eval's. A directory
without a readable owner file (being made right now, or by an older loop) is never removed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PREFIX = "loop-eval-"
OWNER = "owner.json"
TAG = "LOOP_EVAL_COPY"  # in the environment of everything a run starts: its copy's path
_swept: set[str] = set()  # temporary directories this process has swept already


@contextmanager
def run_copy(name: str) -> Iterator[Path]:
    """A fresh temporary directory for one run, marked as this process's; removed when the run ends."""
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}{name}-") as tmp:
        root = Path(tmp)
        part = root / f".{OWNER}.part"
        part.write_text(json.dumps(me()), encoding="utf-8")
        part.replace(root / OWNER)  # whole or absent: a sweep never reads half an owner
        yield root


def me() -> dict:
    """This process as an owner file names it."""
    pid = os.getpid()
    return {"pid": pid, "start": start_time(pid), "boot": boot_id(), "host": socket.gethostname(),
            "pidns": pid_namespace()}


def sweep(where: str | None = None) -> list[Path]:
    """Remove the copies in `where` (the temporary directory) whose maker is gone; the removed ones."""
    where = where or tempfile.gettempdir()
    removed = []
    try:
        entries = list(os.scandir(where))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        owner = _owner(Path(entry.path) / OWNER)
        if owner is not None and gone(owner):
            end_leftovers(entry.path)
            _remove(entry.path)
            removed.append(Path(entry.path))
    return removed


def end_leftovers(copy: str) -> list[int]:
    """SIGKILL the processes whose environment names `copy` as their run's (Linux); their pids."""
    needle = f"{TAG}={copy}".encode()
    found = []
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    for pid in pids:
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            os.kill(pid, signal.SIGKILL)
        except OSError:  # gone meanwhile, or another user's
            continue
        found.append(pid)
    return found


def sweep_once() -> list[Path]:
    """`sweep` the temporary directory once per process (each Dask worker cleans its own machine)."""
    where = tempfile.gettempdir()
    if where in _swept:
        return []
    _swept.add(where)
    return sweep(where)


def gone(owner: dict) -> bool:
    """Whether the process an owner file names has ended. Unsure (another machine, a pid we may not
    signal, a malformed file) counts as alive: only a copy known to be orphaned is removed."""
    pid = owner.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    if owner.get("host") != socket.gethostname() or owner.get("pidns") != pid_namespace():
        return False  # a TMPDIR shared with another machine or container: its pids are not ours to look up
    if owner.get("boot") and boot_id() and owner["boot"] != boot_id():
        return True  # made before the machine last started
    if owner.get("start") is not None and os.path.isdir("/proc/self"):
        return start_time(pid) != owner["start"]  # ended, a zombie, or the pid now names another process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), None when it is not running."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if not fields or fields[0] in ("Z", "X") or len(fields) < 20:
        return None
    return fields[19]  # field 22 of stat; the split starts at field 3


def pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


def _owner(path: Path) -> dict | None:
    try:
        if path.is_symlink():
            return None
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _remove(path: str) -> None:
    """rmtree that also gets through directories a run left without write or search permission."""
    def retry(func, name, _exc) -> None:
        try:
            os.chmod(os.path.dirname(name), 0o700)
            if os.path.isdir(name) and not os.path.islink(name):
                os.chmod(name, 0o700)
                shutil.rmtree(name, ignore_errors=True)
            else:
                func(name)
        except OSError:
            pass

    shutil.rmtree(path, onerror=retry)
