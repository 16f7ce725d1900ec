"""What loop learned about each model server at run time: `$LOOP_HOME/servers.json`.

One small record per (provider, base URL, model): whether streamed tool calls work, the context
size the server reported, when it was learned. The file is a cache, never a source of truth a run
depends on: a missing, corrupt or foreign file reads as empty (with a notice), and a write that
fails is reported and forgotten. Writers take an flock on a side file and replace the file
atomically, so concurrent runs never leave half a file or lose each other's records.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from loopagent.secrets import public_url

VERSION = 1


@dataclass(frozen=True)
class Capabilities:
    """One server's record. None means "not learned yet"."""

    stream_tools: bool | None = None  # streamed requests with tools get usable replies
    ctx_size: int | None = None  # the context size the server reported (issue 13 item 4)
    ctx_source: str | None = None  # where ctx_size came from: /props, /v1/models, /api/show...; "": nowhere
    ctx_learned: str | None = None  # when the server was last asked for its context size (run/discovery.py)
    learned: str = ""  # ISO 8601 UTC time of the last change

    @classmethod
    def from_json(cls, data: Any) -> Capabilities | None:
        """A record from the file, or None when it is not one (unknown keys are ignored)."""
        if not isinstance(data, dict):
            return None
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if not isinstance(values.get("stream_tools", None), (bool, type(None))):
            return None
        if not isinstance(values.get("ctx_size", None), (int, type(None))):
            return None
        if not isinstance(values.get("learned", ""), str) or not isinstance(values.get("ctx_source"), (str, type(None))):
            return None
        if not isinstance(values.get("ctx_learned"), (str, type(None))) or isinstance(values.get("ctx_size"), bool):
            return None
        return cls(**values)


def server_key(provider: str, base_url: str, model: str) -> str:
    """The record's key; the URL without credentials or query (a key may hide there)."""
    return f"{provider} {public_url(base_url) or base_url} {model}"


class ServerBook:
    """Reads and updates `servers.json` under `home`; problems go to `notify` as one line each."""

    def __init__(self, home: Path, notify: Callable[[str], None] | None = None, warn_writes: bool = True):
        self.path = Path(home) / "servers.json"
        self.notify = notify or (lambda text: None)
        self.warn_writes = warn_writes  # False: a failed write is silent (the caller has a louder failure coming)
        self._warned = False

    def get(self, key: str) -> Capabilities:
        """The record for `key` (an empty one when nothing is known)."""
        return self._read().get(key) or Capabilities()

    def update(self, key: str, **changes: Any) -> Capabilities | None:
        """Merge `changes` into the record for `key` and write the file; None when it cannot be written."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path.with_name("servers.json.lock"), "a+b") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # read-modify-write: another run may be doing the same
                records = self._read()
                record = Capabilities(**{**asdict(records.get(key) or Capabilities()), **changes,
                                         "learned": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
                records[key] = record
                self._write(records)
                return record
        except OSError as exc:
            if self.warn_writes:
                self._tell(f"cannot write {self.path}: {exc.strerror or exc}; the server's capabilities are not kept")
            return None

    def _read(self) -> dict[str, Capabilities]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            self._tell(f"cannot read {self.path} ({exc}); ignoring it")
            return {}
        try:
            data = json.loads(text)
        except ValueError:
            self._tell(f"{self.path} is not valid JSON; ignoring it (it is rewritten when loop learns something)")
            return {}
        servers = data.get("servers") if isinstance(data, dict) else None
        if not isinstance(servers, dict):
            self._tell(f"{self.path} does not look like loop's servers file; ignoring it")
            return {}
        records = {}
        for key, value in servers.items():
            record = Capabilities.from_json(value)
            if record is not None:  # one bad record does not cost the others
                records[key] = record
        return records

    def _write(self, records: dict[str, Capabilities]) -> None:
        payload = {"version": VERSION,
                   "servers": {k: {f: v for f, v in asdict(r).items() if v is not None} for k, r in records.items()}}
        fd, tmp = tempfile.mkstemp(prefix=".servers-", suffix=".json", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(payload, out, indent=1, sort_keys=True)
                out.write("\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)  # readers see the old file or the new one, never half of one
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def _tell(self, text: str) -> None:
        if not self._warned:  # one notice per run is enough for a cache
            self._warned = True
            self.notify(text)
