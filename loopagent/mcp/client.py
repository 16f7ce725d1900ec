"""MCP servers over stdio, run on one background thread; synchronous start, list, call and close.

The SDK is asyncio/anyio. One daemon thread runs an event loop with a BlockingPortal; each
server is one long-lived task there that holds its process and session (anyio's cancel scopes
must be entered and left by the same task), and calls are short tasks beside it. A daemon
thread, not anyio's start_blocking_portal: that one's executor thread is joined before atexit
handlers run, so an unclosed hub would hang the interpreter's exit.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import errno
import logging
import os
import re
import shutil
import threading
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal

from loopagent.cancel import CANCELLED, Cancel
from loopagent.mcp.settings import ServerConfig

# What a server inherits from loop's environment; everything else it gets only by its `env`.
INHERITED = ("HOME", "LOGNAME", "USER", "PATH", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")
GRACE = 2.0  # seconds the synchronous side waits beyond a timeout the event loop enforces itself
# The log of the server whose task is running: the SDK's own log lines (a line on the server's stdout that
# is not JSON-RPC, with its traceback) are written there, not to the terminal. Tasks inherit it.
SERVER_LOG: ContextVar[Any] = ContextVar("loop_mcp_server_log", default=None)


class CallFailed(Exception):
    """A call that got no answer: `outcome` is "timeout", "cancelled" or "error" (a dead server)."""

    def __init__(self, message: str, outcome: str = "error"):
        super().__init__(message)
        self.outcome = outcome


@dataclass
class Server:
    """One configured server and what is known of it; `error` says why it is not running."""

    name: str
    config: ServerConfig
    tools: list[Any] = field(default_factory=list)  # mcp.types.Tool, as first listed
    started: bool = False
    error: str = ""
    broken: bool = False  # timed out or died: restarted (once) on its next use
    restarts: int = 0
    generation: int = 0  # which launch is current: a stopping task must not touch its successor's state
    session: Any = None
    stop: Any = None  # anyio.Event, set to end the server's task
    ready: threading.Event = field(default_factory=threading.Event)
    done: concurrent.futures.Future | None = None


class Hub:
    """The run's MCP servers. `start()` once, then `call()` from any thread, `close()` at the end (or at exit)."""

    def __init__(self, configs: Mapping[str, ServerConfig], home: Path, env: Mapping[str, str], cwd: Path):
        self.servers = {name: Server(name, cfg) for name, cfg in configs.items()}
        self.home, self.env, self.cwd = home, env, cwd
        self.portal: BlockingPortal | None = None
        self._up = threading.Event()
        self._closed = False

    def start(self) -> list[str]:
        """Start every server in parallel, each within its startup_timeout; one warning per server that failed."""
        self.launch()
        return self.wait()

    def launch(self) -> None:
        """Spawn every server at once and return: the caller does its own start-up meanwhile, then `wait()`s."""
        quiet_sdk()
        thread = threading.Thread(target=anyio.run, args=(self._loop,), name="loop-mcp", daemon=True)
        thread.start()
        self._up.wait(10)
        atexit.register(self.close)
        for server in self.servers.values():
            self._launch(server)

    def wait(self) -> list[str]:
        """Until every launched server is up or past its startup_timeout; one warning per server that failed."""
        for server in self.servers.values():
            self._await_start(server)
        return [f"MCP server {s.name!r} did not start: {s.error}" for s in self.servers.values() if not s.started]

    async def _loop(self) -> None:
        async with BlockingPortal() as portal:
            self.portal = portal
            self._up.set()
            await portal.sleep_until_stopped()

    def _launch(self, server: Server) -> None:
        server.ready.clear()
        server.started, server.error, server.broken, server.session = False, "", False, None
        server.generation += 1
        server.done = self.portal.start_task_soon(self._serve, server, server.generation)

    def _await_start(self, server: Server) -> None:
        if not server.ready.wait(server.config.startup_timeout + GRACE) and not server.error:
            server.error = f"no answer within {server.config.startup_timeout:g} s"

    async def _serve(self, server: Server, generation: int) -> None:
        """The server's life: spawn, initialize, list tools, then wait to be stopped; errors end in `error`."""
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        from loopagent.spawn import guard

        cfg = server.config
        server.stop = anyio.Event()
        try:
            env = self.environment(cfg)
            # guarded: its process group ends with loop, also when loop is SIGKILLed. The guard's parent-death
            # signal follows this thread, the hub's event loop, which runs until the hub is closed.
            command, *args = guard([executable(cfg.command, env.get("PATH", os.defpath), self.cwd), *cfg.args])
            params = StdioServerParameters(command=command, args=args, env=env, cwd=self.cwd)
            with self.log(server) as errlog:
                SERVER_LOG.set(errlog)
                async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                    with anyio.fail_after(cfg.startup_timeout):
                        await session.initialize()
                        tools = await list_tools(session)
                    if not server.tools:
                        server.tools = tools
                    server.session, server.started = session, True
                    server.ready.set()
                    await server.stop.wait()
        except Exception as exc:  # a missing command, a crash during the handshake: a warning, not the run's end
            if generation == server.generation and not server.error:
                timed_out = isinstance(first(exc), TimeoutError)  # raised inside the SDK's task group
                server.error = f"no answer within {cfg.startup_timeout:g} s" if timed_out else describe(exc)
        finally:
            if generation == server.generation:
                server.session = None
                server.broken = server.broken or server.started
                server.ready.set()

    def log(self, server: Server):
        """The server's stderr: $LOOP_HOME/logs/mcp-NAME.log, appended, never the terminal."""
        logs = self.home / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        f = open(logs / f"mcp-{re.sub(r'[^A-Za-z0-9_.-]', '_', server.name)}.log", "a", encoding="utf-8")
        f.write(f"--- loop starts {server.config.command} {' '.join(server.config.args)}\n")
        f.flush()
        return f

    def environment(self, cfg: ServerConfig) -> dict[str, str]:
        """A minimal environment with a safe path (PYTHONSAFEPATH=1, PATH without relative entries: the
        server runs in the workspace) plus the server's `env` (${VAR} taken from loop's environment),
        which may say otherwise: it is the user's own file."""
        from loopagent.spawn import safe_env

        base = safe_env({k: self.env[k] for k in INHERITED if k in self.env})
        extra = {k: re.sub(r"\$\{(\w+)\}", lambda m: self.env.get(m[1], ""), v) for k, v in cfg.env.items()}
        return {**base, **extra}

    def call(self, name: str, tool: str, arguments: dict[str, Any], cancel: Cancel) -> Any:
        """The server's CallToolResult; CallFailed when it timed out, died, or the turn was cancelled."""
        server = self.servers[name]
        self._revive(server)
        timeout = server.config.tool_timeout
        future = self.portal.start_task_soon(self._call, server, tool, arguments)
        forget = cancel.on_cancel(future.cancel)
        try:
            return future.result(timeout=timeout + GRACE)
        except concurrent.futures.CancelledError:
            raise CallFailed(CANCELLED, "cancelled") from None
        except concurrent.futures.TimeoutError:
            future.cancel()
            server.broken = True
            raise CallFailed(f"MCP server {name!r}: {tool} did not answer within {timeout:g} s", "timeout") from None
        finally:
            forget()

    async def _call(self, server: Server, tool: str, arguments: dict[str, Any]) -> Any:
        from mcp.shared.exceptions import McpError

        timeout = server.config.tool_timeout
        if server.session is None:
            raise CallFailed(f"MCP server {server.name!r} is not running ({server.error or 'it stopped'})")
        try:
            with anyio.fail_after(timeout):
                return await server.session.call_tool(tool, arguments)
        except TimeoutError:
            server.broken = True
            raise CallFailed(f"MCP server {server.name!r}: {tool} did not answer within {timeout:g} s; "
                             "the server will be restarted on its next use", "timeout") from None
        except McpError as exc:
            if "closed" not in str(exc).lower():
                raise CallFailed(f"MCP server {server.name!r}: {exc}") from None
            server.broken = True
            raise CallFailed(f"MCP server {server.name!r} stopped during the call ({exc}); "
                             "it will be restarted on its next use") from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            server.broken = True
            raise CallFailed(f"MCP server {server.name!r} is gone ({type(exc).__name__})") from None

    def _revive(self, server: Server) -> None:
        """Restart a server that timed out or died, once per run; CallFailed when it cannot serve."""
        if server.started and not server.broken and server.session is not None:
            return
        if server.restarts >= 1 or not server.tools:
            why = server.error or "it stopped"
            raise CallFailed(f"MCP server {server.name!r} is not running ({why}); it was restarted once already"
                             if server.restarts else f"MCP server {server.name!r} is not running ({why})")
        server.restarts += 1
        self._stop(server)
        self._launch(server)
        self._await_start(server)
        if not server.started:
            raise CallFailed(f"MCP server {server.name!r} could not be restarted: {server.error}")

    def _stop(self, server: Server, wait: float = 5.0) -> None:
        if server.stop is not None and self.portal is not None:
            try:
                self.portal.call(server.stop.set)
            except RuntimeError:  # the event loop is gone already
                return
        if server.done is not None:
            concurrent.futures.wait([server.done], timeout=wait)

    def close(self) -> None:
        """Stop every server (their processes end with their stdin) and the event loop; idempotent."""
        if self._closed or self.portal is None:
            return
        self._closed = True
        for server in self.servers.values():
            if server.stop is not None:
                try:
                    self.portal.call(server.stop.set)
                except RuntimeError:
                    pass
        concurrent.futures.wait([s.done for s in self.servers.values() if s.done is not None], timeout=5)
        try:
            self.portal.call(self.portal.stop)
        except RuntimeError:
            pass


async def list_tools(session: Any) -> list[Any]:
    """Every tool the server offers, following pagination."""
    tools, cursor = [], None
    while True:
        page = await session.list_tools(cursor) if cursor else await session.list_tools()
        tools += page.tools
        cursor = page.nextCursor
        if not cursor:
            return tools


def executable(command: str, path: str, cwd: Path) -> str:
    """The program `command` names, as the server's own exec would find it (a path with a slash is taken
    from the workspace); FileNotFoundError naming it when there is none, so that the warning says so."""
    if os.sep in command:
        found = os.path.join(cwd, command)
        if os.path.isfile(found) and os.access(found, os.X_OK):
            return found
    elif found := shutil.which(command, path=path):
        return os.path.abspath(found)
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)


class ServerLog(logging.Handler):
    """The SDK's log records, to the log of the server whose task logged them (SERVER_LOG); none to the terminal."""

    def emit(self, record: logging.LogRecord) -> None:
        log = SERVER_LOG.get()
        if log is None or log.closed:
            return
        text, exc = record.getMessage(), record.exc_info[1] if record.exc_info else None
        if exc is not None:
            text += f": {type(exc).__name__}: {exc}"
        if callable(getattr(exc, "errors", None)) and "JSONRPC" in text:  # pydantic's: the line is what helps
            try:
                text = f"not a JSON-RPC message on stdout: {str(exc.errors()[0]['input'])[:500]!r}"
            except (IndexError, KeyError, TypeError):
                pass
        try:
            log.write(f"--- loop: {record.levelname.lower()} from the MCP SDK: {text}\n")
            log.flush()
        except (OSError, ValueError):
            pass


def quiet_sdk() -> None:
    """Route the SDK's logger to the servers' logs (once): with no handler of its own, Python's last-resort
    handler would print a Traceback on the user's terminal for every line of noise on a server's stdout."""
    logger = logging.getLogger("mcp")
    if not any(isinstance(h, ServerLog) for h in logger.handlers):
        logger.addHandler(ServerLog())
        logger.propagate = False


def first(exc: BaseException) -> BaseException:
    """The first real exception inside exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException) -> str:
    """One line for an exception, the first real one inside exception groups."""
    exc = first(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
