"""One language server process and the little of LSP loop speaks with it.

initialize with the workspace as root, didOpen/didChange with whole texts, publishDiagnostics
read as they come, shutdown and exit at the end. A reader thread owns the server's stdout; the
caller waits on a condition with a deadline, so a silent, slow or garbage-speaking server costs
at most the wait. Requests the server makes of loop get an empty answer.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopagent.lsp.diagnostics import Diagnostic, parse
from loopagent.lsp.framing import FramingError, encode, read_message

CLOSE_WAIT = 1.0  # seconds for shutdown's answer, then for the process to exit; then it is killed


class ServerGone(Exception):
    """The server exited, spoke something that is not LSP, or did not answer in time."""


@dataclass
class Published:
    """The last diagnostics a server published for one document, and which publication that was."""

    count: int = 0  # publications seen for the document
    version: int | None = None
    items: list[Diagnostic] = field(default_factory=list)


class Server:
    """A started server: `proc` speaks LSP on its stdin/stdout. Thread-safe."""

    def __init__(self, proc: subprocess.Popen, root: Path, on_close: Callable[[], None] = lambda: None):
        self.proc, self.root, self.on_close = proc, root, on_close
        self.cond = threading.Condition()
        self.write_lock = threading.Lock()
        self.answers: dict[int, Any] = {}
        self.published: dict[str, Published] = {}
        self.texts: dict[str, tuple[int, str]] = {}  # uri -> (version, text) the server has
        self.problem = ""  # why it is gone ("" while it speaks)
        self.ready = False  # it answered initialize: it may be asked to shut down
        self.next_id = 0
        self.reader = threading.Thread(target=self.read, name="loop-lsp-reader", daemon=True)
        self.reader.start()

    # -- the wire

    def read(self) -> None:
        try:
            while (message := read_message(self.proc.stdout)) is not None:
                self.take(message)
            problem = "it exited"
        except FramingError as exc:
            problem = f"it does not speak LSP ({exc})"
        except (OSError, ValueError):  # its pipe closed under us: we are closing it
            problem = "it exited"
        with self.cond:
            self.problem = self.problem or problem
            self.cond.notify_all()

    def take(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None and "id" in message:
            with self.cond:
                self.answers[message["id"]] = message
                self.cond.notify_all()
        elif method is not None and "id" in message:  # a request of the server's: answer it, emptily
            params = message.get("params")
            items = params.get("items") if isinstance(params, dict) else None
            result = [None] * len(items) if method == "workspace/configuration" and isinstance(items, list) else None
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif method == "textDocument/publishDiagnostics":
            params = message.get("params")
            if not isinstance(params, dict) or not isinstance(params.get("uri"), str):
                return
            version = params.get("version")
            with self.cond:
                seen = self.published.setdefault(params["uri"], Published())
                seen.count += 1
                seen.version = version if isinstance(version, int) and not isinstance(version, bool) else None
                seen.items = parse(params.get("diagnostics"))
                self.cond.notify_all()

    def send(self, message: dict[str, Any]) -> None:
        try:
            with self.write_lock:
                self.proc.stdin.write(encode(message))
                self.proc.stdin.flush()
        except (OSError, ValueError):
            with self.cond:
                self.problem = self.problem or "it exited"
                self.cond.notify_all()
            raise ServerGone(self.problem) from None

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, deadline: float, stop: Callable[[], bool] = lambda: False) -> Any:
        with self.cond:
            self.next_id += 1
            ident = self.next_id
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        answer = self.wait(lambda: self.answers.pop(ident, None), deadline, stop, f"no answer to {method}")
        if "error" in answer:
            raise ServerGone(f"{method} failed: {str(answer['error'])[:200]}")
        return answer.get("result")

    def wait(self, ready: Callable[[], Any], deadline: float, stop: Callable[[], bool], late: str) -> Any:
        """`ready()`'s first value that is not None, polled under the lock, until `deadline`."""
        with self.cond:
            while True:
                found = ready()
                if found is not None:
                    return found
                if self.problem:
                    raise ServerGone(self.problem)
                left = deadline - time.monotonic()
                if left <= 0 or stop():
                    raise TimeoutError(late)
                self.cond.wait(min(left, 0.1))

    # -- what loop asks

    def initialize(self, deadline: float, stop: Callable[[], bool] = lambda: False) -> None:
        uri = self.root.as_uri()
        self.request("initialize", {
            "processId": None, "rootUri": uri, "rootPath": str(self.root),
            "workspaceFolders": [{"uri": uri, "name": self.root.name or "workspace"}],
            "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": True},
                                              "synchronization": {"didSave": False}},
                             "workspace": {"configuration": True, "workspaceFolders": True}},
            "clientInfo": {"name": "loop"},
        }, deadline, stop)
        self.ready = True
        self.notify("initialized", {})

    def show(self, uri: str, language_id: str, text: str) -> int:
        """Give the server `text` as the document's content (didOpen, then didChange); its version."""
        with self.cond:
            held = self.texts.get(uri)
            version = 1 if held is None else held[0] + 1
            self.texts[uri] = (version, text)
        if held is None:
            self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language_id,
                                                                  "version": version, "text": text}})
        else:
            self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                   "contentChanges": [{"text": text}]})
        return version

    def known(self, uri: str, text: str) -> list[Diagnostic] | None:
        """The diagnostics last published for `text`, when the server holds it and said so; else None."""
        with self.cond:
            held, seen = self.texts.get(uri), self.published.get(uri)
            if held is None or held[1] != text or seen is None or seen.version not in (None, held[0]):
                return None
            return list(seen.items)

    def diagnostics(self, uri: str, version: int, since: int, deadline: float,
                    stop: Callable[[], bool] = lambda: False) -> list[Diagnostic]:
        """The diagnostics of `version` of the document: a publication that names that version, or
        (from a server that names none) the first one after the `since`-th."""
        def ready() -> list[Diagnostic] | None:
            seen = self.published.get(uri)
            if seen is None or seen.count <= since:
                return None
            if seen.version is not None and seen.version < version:
                return None
            return list(seen.items)

        return self.wait(ready, deadline, stop, "no diagnostics")

    def seen(self, uri: str) -> int:
        with self.cond:
            return self.published.get(uri, Published()).count

    @property
    def alive(self) -> bool:
        return not self.problem and self.proc.poll() is None

    def close(self) -> None:
        """shutdown, exit, and the process's end (killed when it will not go)."""
        try:
            if self.alive and self.ready:
                deadline = time.monotonic() + CLOSE_WAIT
                try:
                    self.request("shutdown", None, deadline)
                    self.notify("exit", {})
                except (ServerGone, TimeoutError):
                    pass
                self.proc.wait(max(0.05, deadline - time.monotonic() + CLOSE_WAIT))
        except subprocess.TimeoutExpired:
            pass
        finally:
            if self.proc.poll() is None:
                kill_group(self.proc)
            self.reader.join(CLOSE_WAIT)
            for pipe in (self.proc.stdin, self.proc.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass
            self.on_close()


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the server's process group (it leads one: bwrap or the guard, and what they started)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()
