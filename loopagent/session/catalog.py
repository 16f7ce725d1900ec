"""Where sessions live, how they are named, found and summarised.

`$LOOP_HOME/sessions/<workspace key>/<UTC timestamp>-<label>.jsonl`; the file name
without `.jsonl` is the session id.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from loopagent.errors import SessionError
from loopagent.session.lock import in_use
from loopagent.session.typed import typed

SUFFIX = ".jsonl"


def workspace_key(workspace: Path) -> str:
    """A readable, stable directory name for a workspace: its slug plus a short hash of its real path."""
    real = os.path.realpath(workspace)
    slug = re.sub(r"[^a-z0-9]+", "-", Path(real).name.lower()).strip("-")[:40] or "root"
    return f"{slug}-{hashlib.sha256(real.encode()).hexdigest()[:8]}"


def sessions_dir(home: Path, workspace: Path) -> Path:
    """Where a workspace's session files live."""
    return home / "sessions" / workspace_key(workspace)


def unwritable(directory: Path) -> str:
    """'' when files can be created in `directory` (made if missing); else the OS reason and the path."""
    import tempfile

    def reason(exc: OSError, path: object) -> str:
        return f"{(exc.strerror or type(exc).__name__).lower()}: {path}"

    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return reason(exc, exc.filename or directory)
    try:
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".loop-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return reason(exc, directory)
    return ""


def label(task: str) -> str:
    """A short file-name label from the first words of the task."""
    words = re.findall(r"[a-z0-9]+", task.lower())[:6]
    return "-".join(words)[:40].strip("-") or "session"


def new_path(home: Path, workspace: Path, task: str, now: datetime | None = None, number: int = 1) -> Path:
    """A fresh session path (the directory is created; the file is not); `number` > 1 is a fork's."""
    directory = sessions_dir(home, workspace)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SessionError(f"cannot create the session directory {directory}: {exc.strerror or exc}") from None
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    base = f"{stamp}-{label(task)}"
    path, n = directory / (f"{base}-{number}{SUFFIX}" if number > 1 else f"{base}{SUFFIX}"), number
    while path.exists():  # two sessions in one second: number the later one
        n += 1
        path = directory / f"{base}-{n}{SUFFIX}"
    return path


STAMP = re.compile(r"\d{8}T\d{6}Z-")


def fork_path(home: Path, workspace: Path, parent: Path, now: datetime | None = None) -> Path:
    """A fresh path for a fork of the session file `parent`: its label numbered within the family,
    `<time>-fix-the-test-2`, `-3` ... (the number after the highest one this workspace already has,
    so a fork of a fork continues the count rather than growing `-2-2`)."""
    base = STAMP.sub("", parent.stem, count=1)
    if parent_of(read_header(parent)) is not None:  # the parent is itself a fork: its number is not its label
        base = re.sub(r"-\d+$", "", base)
    base = label(base.replace("-", " "))
    directory = sessions_dir(home, workspace)
    taken = re.compile(rf"{STAMP.pattern}{re.escape(base)}-(\d+){re.escape(SUFFIX)}$")
    numbers = [int(m[1]) for p in (directory.glob(f"*{SUFFIX}") if directory.is_dir() else [])
               if (m := taken.match(p.name))]
    return new_path(home, workspace, base, now, number=max(numbers, default=1) + 1)


@dataclass(frozen=True)
class Summary:
    id: str
    path: Path
    created: str
    steps: int
    status: str
    task: str
    parent: dict | None = None  # a fork's {"session", "message"} (see `parent_of`)


def parent_of(header: dict) -> dict | None:
    """A header's `parent` {"session": id, "message": index} when it is well formed, else None; a `task`
    child's also names its agent ({"agent": "explore"})."""
    parent = header.get("parent")
    if not isinstance(parent, dict) or not isinstance(parent.get("session"), str):
        return None
    message = parent.get("message")
    if not isinstance(message, int) or isinstance(message, bool):
        return None
    agent = parent.get("agent")
    if isinstance(agent, str) and re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", agent):
        return {"session": parent["session"], "message": message, "agent": agent}
    return {"session": parent["session"], "message": message}


def read_header(path: Path) -> dict:
    """The first line of a session file as a dict ({} when it is missing or unreadable)."""
    try:
        with path.open("rb") as f:
            first = f.readline()
        header = json.loads(first)
    except (OSError, ValueError):
        return {}
    return header if isinstance(header, dict) and header.get("type") == "header" else {}


def summarise(path: Path) -> Summary:
    """Id, time, steps (model replies), last status and task of one session file."""
    header = read_header(path)
    try:
        data = path.read_bytes()
    except OSError:
        data = b""
    steps = data.count(b'"role":"assistant"')
    status = "unfinished"  # no end record after the last message: still running, or killed
    for line in reversed(data.splitlines()):
        if b'"type":"message"' in line:
            break
        if line.startswith(b'{"type":"end"'):
            try:
                status = json.loads(line).get("status", status)
            except ValueError:
                pass
            break
    task = str(header.get("task", "")).strip() or first_task(data)
    if status == "unfinished" and (pid := in_use(path)):
        status = f"running (pid {pid})"
    return Summary(path.stem, path, str(header.get("created", "")), steps, status, task.split("\n", 1)[0],
                   parent_of(header))


def first_task(data: bytes) -> str:
    """The first user message of a session (an interactive one has no task in its header)."""
    for line in data.splitlines():
        if b'"role":"user"' in line:
            try:
                return typed(str(json.loads(line).get("content", ""))).strip()
            except ValueError:
                return ""
    return ""


def paths(home: Path, workspace: Path) -> list[Path]:
    """The workspace's session files, newest first (by the creation time in their headers)."""
    directory = sessions_dir(home, workspace)
    if not directory.is_dir():
        return []
    found = [p for p in directory.glob(f"*{SUFFIX}") if p.is_file()]
    return sorted(found, key=lambda p: (str(read_header(p).get("created", "")), p.stem), reverse=True)


def listing(home: Path, workspace: Path) -> list[Summary]:
    """The workspace's sessions, newest first."""
    return [summarise(p) for p in paths(home, workspace)]


def find(home: Path, workspace: Path, spec: str) -> Path:
    """The session file `spec` names: "last", an id (or a unique prefix of one), or a path."""
    candidate = Path(spec).expanduser()
    if spec.endswith(SUFFIX) or os.sep in spec:
        if candidate.is_file():
            return candidate
        raise SessionError(f"no session file at {spec}")
    sessions = paths(home, workspace)
    if not sessions:
        raise SessionError(f"no saved sessions for workspace {os.path.realpath(workspace)}")
    if spec == "last":  # a `task` child's session is its parent's part, never the one to continue
        return next((p for p in sessions if "agent" not in (parent_of(read_header(p)) or {})), sessions[0])
    exact = [p for p in sessions if p.stem == spec]
    matches = exact or [p for p in sessions if p.stem.startswith(spec)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise SessionError(f"no session {spec!r} in this workspace; `loop sessions` lists them")
    names = ", ".join(p.stem for p in matches[:5])
    raise SessionError(f"session {spec!r} is ambiguous ({names}); give more of the id")
