"""`loop acp` as a process: the protocol alone on stdout, diagnostics on stderr and in $LOOP_HOME/logs/.

Before anything else runs, the protocol's descriptors are taken aside and fd 1 is pointed at stderr and
fd 0 at /dev/null: a stray print, a warning, or a child process (an MCP server, a hook) writing to
"stdout" or reading "stdin" can never corrupt or steal a protocol message.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path
from typing import IO

from loopagent.acp.agent import Defaults, LoopAgent

STREAM_LIMIT = 50 * 1024 * 1024  # one protocol line: an embedded resource may be a whole file


def take_stdio() -> tuple[IO[bytes], IO[bytes]]:
    """(protocol in, protocol out): private duplicates of fds 0 and 1, which now lead elsewhere."""
    sys.stdout.flush()
    proto_in, proto_out = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return os.fdopen(proto_in, "rb", buffering=0), os.fdopen(proto_out, "wb", buffering=0)


class Tee(io.TextIOBase):
    """stderr that also appends each line to the log file: the run's warnings and notes (printed to stderr
    as in the terminal) reach $LOOP_HOME/logs/ too, where an editor that hides stderr leaves them."""

    def __init__(self, screen: IO[str], log: IO[str]):
        self.screen, self.log = screen, log

    def write(self, text: str) -> int:
        self.screen.write(text)
        self.log.write(text)
        return len(text)

    def flush(self) -> None:
        self.screen.flush()
        self.log.flush()

    def fileno(self) -> int:
        return self.screen.fileno()

    def isatty(self) -> bool:
        return False


def start_logging(home: Path) -> None:
    """Diagnostics (the run's, and the SDK's warnings and errors) to stderr and $LOOP_HOME/logs/acp.log."""
    try:
        (home / "logs").mkdir(parents=True, exist_ok=True)
        log = (home / "logs" / "acp.log").open("a", encoding="utf-8", buffering=1)
    except OSError as exc:
        print(f"loop: acp: no log file in {home / 'logs'}: {exc.strerror or exc}", file=sys.stderr)
    else:
        log.write(f"-- loop acp started {time.strftime('%Y-%m-%d %H:%M:%S')} (pid {os.getpid()})\n")
        sys.stderr = Tee(sys.stderr, log)
    logging.basicConfig(level=logging.WARNING, format="loop acp: %(levelname)s %(message)s",
                        handlers=[logging.StreamHandler(sys.stderr)], force=True)


def pollable(stream: IO[bytes]) -> bool:
    """Whether the event loop can watch `stream`: a pipe, a socket or a terminal (not a file, /dev/null)."""
    mode = os.fstat(stream.fileno()).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(stream.fileno())


class BlockingWrite(asyncio.WriteTransport):
    """Writes to a file that cannot be polled (stdout redirected to a file), each write whole."""

    def __init__(self, stream: IO[bytes]):
        super().__init__()
        self.stream, self.closing = stream, False

    def write(self, data: bytes) -> None:  # type: ignore[override]
        view = memoryview(data)
        while view:
            view = view[os.write(self.stream.fileno(), view):]

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True


def feed(stream: IO[bytes], reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
    """Read a stream that cannot be polled in a thread (stdin from a file or /dev/null)."""
    def read() -> None:
        try:
            while data := stream.read(1 << 16):
                loop.call_soon_threadsafe(reader.feed_data, data)
        finally:
            loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=read, name="loop-acp-stdin", daemon=True).start()


async def streams(proto_in: IO[bytes], proto_out: IO[bytes]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    if pollable(proto_in):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), proto_in)
    else:
        feed(proto_in, reader, loop)
    if pollable(proto_out):
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, proto_out)
    else:
        transport, protocol = BlockingWrite(proto_out), asyncio.streams.FlowControlMixin()
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def serve_streams(agent: LoopAgent, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer one client until it closes the connection, then end every session."""
    from acp.agent.connection import AgentSideConnection

    conn = AgentSideConnection(agent, writer, reader, listening=False)
    agent.client.writer = writer
    try:
        await conn.listen()
    finally:
        await agent.close()
        await asyncio.shield(conn.close())


def serve(defaults: Defaults, home: Path) -> int:
    """Run `loop acp` on this process's stdio until the client hangs up or a stopping signal comes; the exit
    code (0, or 128 + the signal: SIGINT, SIGTERM and SIGHUP end every turn as Ctrl+C
    does, and the sessions are closed)."""
    proto_in, proto_out = take_stdio()
    start_logging(home)
    stopped: list[int] = []

    async def main() -> None:
        reader, writer = await streams(proto_in, proto_out)
        serving = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(signum, lambda signum=signum: (stopped.append(signum), serving.cancel()))
        try:
            await serve_streams(LoopAgent(defaults), reader, writer)
        except asyncio.CancelledError:
            if not stopped:
                raise

    asyncio.run(main())
    return 128 + stopped[0] if stopped else 0
