"""The run's language servers: one per language, started on the first edit of a file of that
language, restarted once if it dies, shut down with the run; and the call the file tools make.

Never in the way: every wait ends at the run's `lsp_timeout` after the edit; a server that cannot
be found, started, or understood, or that is slow, costs one notice per server and run, and the
edit's result is as it would be without it.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopagent.lsp.client import Server, ServerGone
from loopagent.lsp.diagnostics import block, new_since
from loopagent.lsp.servers import Choice, choose, document_of, which

RESTARTS = 1  # a server that dies is started again once per run; then its language goes without


@dataclass
class Slot:
    """One language's server in this run: what was chosen, the process if it runs, what went wrong."""

    choice: Choice | None
    server: Server | None = None
    starts: int = 0
    broken: bool = False  # given up on for the rest of the run
    noticed: bool = False


@dataclass
class Hub:
    """Diagnostics after edits for one workspace. `env` has no secrets; `environ` is the one the
    sandbox reads $HOME and $LOOP_HOME from."""

    root: Path
    setting: Mapping[str, Any]  # the `lsp` setting's entries ({} for just the known servers)
    env: Mapping[str, str]
    environ: Mapping[str, str]
    timeout: float = 5.0
    warnings: bool = False
    slots: dict[str, Slot] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Servers are forked from this thread alone: the parent-death signal that ends them with loop
    # follows the forking thread, and a tool's worker thread ends with its call.
    spawner: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1, "loop-lsp-spawn"))

    def diagnose(self, path: Path, rel: str, old: bytes | None, new: bytes,
                 stop: Callable[[], bool] = lambda: False, warn: Callable[[str], None] = lambda text: None) -> str:
        """The block of what this edit of `path` broke ("" for nothing, or no server in time)."""
        doc = document_of(str(path), self.setting)
        if doc is None:
            return ""
        deadline = time.monotonic() + self.timeout
        ext = os.path.splitext(str(path))[1].lower()
        with self.lock:
            slot = self.slots.get(doc.key)
            if slot is None:
                slot = self.slots[doc.key] = Slot(choose(doc, ext, self.setting, self.env.get("PATH", "")))
            if slot.choice is None or slot.broken:
                return ""
            try:
                server = self.running(slot, deadline, stop)
                before_text = None if old is None else old.decode("utf-8", errors="replace")
                after_text = new.decode("utf-8", errors="replace")
                uri = path.as_uri()
                before = self.current(server, uri, doc.language_id, before_text, deadline, stop)
                after = self.shown(server, uri, doc.language_id, after_text, deadline, stop)
            except TimeoutError:  # before OSError, its base class
                if not stop():
                    self.notice(slot, warn, f"no diagnostics within {self.timeout:g} s (lsp_timeout)", fatal=False)
                return ""
            except (ServerGone, OSError) as exc:
                self.notice(slot, warn, str(exc) or "it exited")
                return ""
        return block(rel, new_since(before, after, before_text or "", after_text, self.warnings))

    def running(self, slot: Slot, deadline: float, stop: Callable[[], bool]) -> Server:
        """The slot's server, started (or restarted once) when it is not running."""
        if slot.server is not None and slot.server.alive:
            return slot.server
        if slot.server is not None:
            slot.server.close()
            slot.server = None
        if slot.starts > RESTARTS:
            raise ServerGone("it died again")
        slot.starts += 1
        assert slot.choice is not None
        server = self.spawner.submit(self.start, slot.choice).result()
        try:
            server.initialize(deadline, stop)
        except (ServerGone, TimeoutError) as exc:
            server.close()
            if stop():
                raise TimeoutError("cancelled") from None
            raise ServerGone(str(exc) if isinstance(exc, ServerGone) else
                             f"no answer to initialize within {self.timeout:g} s") from None
        slot.server = server
        return server

    def start(self, choice: Choice) -> Server:
        from loopagent.sandbox.executor import walled_argv
        from loopagent.spawn import safe_env

        program = which(choice.command[0], self.env.get("PATH", ""))
        if program is None:
            raise ServerGone(f"{choice.command[0]} not found on PATH")
        argv, cleanup, unwalled = walled_argv("read-only", self.root, [program, *choice.command[1:]], self.environ)
        if unwalled:
            # A server reads the workspace's config and may run its code (build scripts, pylint's
            # load-plugins, a project's tsserver plugins): whoever named it, it runs walled or not at all.
            cleanup()
            raise ServerGone(f"not started: no sandbox to run it in ({unwalled})")
        try:
            proc = subprocess.Popen(argv, cwd=self.root, env=safe_env(self.env),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
        except OSError:
            cleanup()
            raise
        return Server(proc, self.root, cleanup)

    def current(self, server: Server, uri: str, language_id: str, text: str | None, deadline: float,
                stop: Callable[[], bool]) -> list:
        """The diagnostics of the file before the edit: the last published if the server holds that
        text, else those of that text, shown to it now. A new file had none."""
        if text is None:
            return []
        known = server.known(uri, text)
        return known if known is not None else self.shown(server, uri, language_id, text, deadline, stop)

    def shown(self, server: Server, uri: str, language_id: str, text: str, deadline: float,
              stop: Callable[[], bool]) -> list:
        since = server.seen(uri)
        version = server.show(uri, language_id, text)
        return server.diagnostics(uri, version, since, deadline, stop)

    def notice(self, slot: Slot, warn: Callable[[str], None], why: str, fatal: bool = True) -> None:
        """Say once per server and run what went wrong; a fatal problem turns the language off."""
        slot.broken = slot.broken or (fatal and (slot.server is None or slot.starts > RESTARTS))
        if not slot.noticed:
            slot.noticed = True
            name = " ".join(slot.choice.command) if slot.choice else "?"
            warn(f"lsp: {name}: {why}; edits go on without its diagnostics")

    def close(self) -> None:
        """Shut every server down (each within a bounded wait), then the spawning thread."""
        with self.lock:
            servers = [s.server for s in self.slots.values() if s.server is not None]
            for slot in self.slots.values():
                slot.server = None
        for server in servers:
            server.close()
        self.spawner.shutdown(wait=False)
