"""The allowlist proxy outside the sandbox: HTTP forward proxy and CONNECT tunnels, no TLS interception.

Started on the first sandboxed call that needs it and closed with the run. Each call gets its own door,
a Unix socket bound into its sandbox (where bridge.py listens on loopback in front of it), so a refused
host is told to the call that asked. Names are resolved here, on the command's behalf; the proxy then
connects to the very addresses it checked, so a second answer from DNS cannot slip past the rules.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from loopagent.sandbox.hosts import HostRules, Verdict, is_address, normal

HEAD_LIMIT = 64 * 1024  # a request head beyond this is no request a package tool sends
HEAD_TIMEOUT = 30.0
CONNECT_TIMEOUT = 10.0
CHUNK = 1024 * 1024  # bytes moved per splice once a connection has shown it carries a download
PIPE_START = 64 * 1024  # a pipe's default size: what a small reply needs
MAX_LINES = 20  # blocked hosts named in one call's result; the rest are counted
MAX_OPEN = 256  # connections of one call served at once (two threads each); more wait in the backlog
HOP_HEADERS = ("proxy-connection", "proxy-authorization", "connection", "keep-alive")

Resolver = Callable[[str, int], list[str]]


def system_resolver(host: str, port: int) -> list[str]:
    """The addresses the system's resolver gives `host` (none when it fails)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(info[4][0] for info in infos))


def read_hosts(path: str) -> dict[str, list[str]]:
    """A hosts(5) file: NAME -> its addresses; raises OSError when unreadable."""
    pinned: dict[str, list[str]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            for name in words[1:]:
                if is_address(words[0]):
                    pinned.setdefault(normal(name), []).append(words[0])
    return pinned


def resolver_for(pinned: Mapping[str, list[str]], fallback: Resolver = system_resolver) -> Resolver:
    """Names in `pinned` (network_hosts) first, then `fallback`."""
    return lambda host, port: list(pinned[host]) if host in pinned else fallback(host, port)


@dataclass
class Door:
    """One call's way out: its Unix socket, the sandbox's listener handed through it, the hosts refused
    to the call, the connections it has open."""

    path: str
    listener: socket.socket  # the Unix socket bound into the sandbox
    inside: socket.socket | None = None  # the bridge's loopback listener, once handed over
    blocked: dict[str, str] = field(default_factory=dict)  # host -> why, in order, MAX_LINES of them
    more: int = 0  # refused requests to hosts beyond those
    open: set[socket.socket] = field(default_factory=set)
    slots: threading.BoundedSemaphore = field(default_factory=lambda: threading.BoundedSemaphore(MAX_OPEN))
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False

    def lines(self) -> list[str]:
        """`network: blocked HOST (why)` for the call's result, and a count of any beyond MAX_LINES."""
        with self.lock:
            items, more = list(self.blocked.items()), self.more
        lines = [f"network: blocked {host} ({why})" for host, why in items]
        if more:
            lines.append(f"network: blocked {more} more request{'s' if more > 1 else ''} to other hosts")
        return lines

    def refuse(self, host: str, why: str) -> None:
        """Remember a refused host for the call's result (a command may try thousands)."""
        with self.lock:
            if host in self.blocked:
                return
            if len(self.blocked) < MAX_LINES:
                self.blocked[host] = why
            else:
                self.more += 1

    def close(self) -> None:
        """Stop accepting and cut what is still open (the call's processes are gone by now)."""
        with self.lock:
            self.closed = True
            conns, self.open = list(self.open), set()
        for listener in filter(None, (self.listener, self.inside)):
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() waiting on it
            listener.close()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def keep(self, conn: socket.socket) -> bool:
        with self.lock:
            if not self.closed:
                self.open.add(conn)
            return not self.closed

    def drop(self, *conns: socket.socket) -> None:
        with self.lock:
            self.open.difference_update(conns)
        for conn in conns:
            conn.close()


class Proxy:
    """The run's proxy: the rules, the resolver, and a private directory for the doors' sockets."""

    def __init__(self, rules: HostRules, resolve: Resolver = system_resolver, workspace: str = ""):
        self.rules, self.resolve = rules, resolve
        # 0700: only loop's user can reach the doors; never in the workspace, where a command could
        # take a door's name before loop binds it.
        self.dir = tempfile.mkdtemp(prefix="loop-net-", dir=socket_parent(workspace))
        self.doors: list[Door] = []
        self.count = 0

    def open_door(self) -> Door:
        """A new Unix socket for one call, waiting for its bridge's listener on a thread."""
        self.count += 1
        path = os.path.join(self.dir, f"{self.count}.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(8)
        door = Door(path, listener)
        self.doors.append(door)
        threading.Thread(target=self.receive, args=(door,), daemon=True, name="loop-proxy").start()
        return door

    def receive(self, door: Door) -> None:
        """Take the bridge's loopback listener from the first handover on the door, then serve it."""
        while door.inside is None:
            try:
                conn, _ = door.listener.accept()
            except OSError:
                return  # closed
            with conn:
                door.inside = handed(conn)
        with door.lock:
            if door.closed:
                door.inside.close()
                return
        self.accept(door, door.inside)

    def accept(self, door: Door, listener: socket.socket) -> None:
        """Serve every connection made to the sandbox's proxy port until the door closes."""
        while True:
            door.slots.acquire()
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed
            if not door.keep(conn):
                conn.close()
                return
            threading.Thread(target=self.serve, args=(door, conn), daemon=True, name="loop-proxy").start()

    def close(self) -> None:
        """Close every door and remove the sockets' directory."""
        for door in self.doors:
            door.close()
        self.doors = []
        shutil.rmtree(self.dir, ignore_errors=True)

    def serve(self, door: Door, conn: socket.socket) -> None:
        """One client connection: a tunnel or one forwarded request, or a 403 naming the rule."""
        upstream = None
        try:
            conn.settimeout(HEAD_TIMEOUT)
            head, rest = read_head(conn)
            method, target, host, port = parse_request(head)
            verdict = self.decide(host, port)
            if not verdict.allowed:
                shown = host if port in (80, 443) else f"{host}:{port}"
                door.refuse(shown, verdict.why)
                conn.sendall(refusal(shown, verdict.why))
                return
            upstream = dial(verdict.addresses, port)
            if upstream is None or not door.keep(upstream):
                conn.sendall(response(502, "Bad Gateway", f"loop: cannot connect to {host}:{port}\n"))
                return
            conn.settimeout(None)
            if method == "CONNECT":
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                upstream.sendall(rest)
            else:
                upstream.sendall(forwarded(head, target) + rest)
            relay(conn, upstream)
        except BadRequest as exc:
            with contextlib.suppress(OSError):
                conn.sendall(response(400, "Bad Request", f"loop: {exc}\n"))
        except OSError:
            pass
        finally:
            door.drop(conn, *([upstream] if upstream is not None else []))
            door.slots.release()

    def decide(self, host: str, port: int) -> Verdict:
        """The rules for `host:port`, before and after resolving it."""
        refused, entry = self.rules.judge(host, port)
        if refused is not None or entry is None:
            return refused or Verdict(False, "not in network_allow")
        addresses = [host] if is_address(host) else self.resolve(host, port)
        return self.rules.check(host, port, entry, addresses)


def socket_parent(workspace: str) -> str:
    """$TMPDIR, unless it lies in the workspace or is too long for a socket's path (108 bytes): /tmp."""
    tmp = os.path.realpath(tempfile.gettempdir())
    inside = workspace and (tmp + "/").startswith(os.path.realpath(workspace).rstrip("/") + "/")
    return "/tmp" if inside or len(tmp) > 64 else tmp


def handed(conn: socket.socket) -> socket.socket | None:
    """The listening TCP socket the bridge sent over `conn`, or None when it sent anything else."""
    from loopagent.sandbox.bridge import HANDOVER

    conn.settimeout(HEAD_TIMEOUT)
    try:
        message, fds, _flags, _addr = socket.recv_fds(conn, len(HANDOVER), 4)
    except OSError:
        return None
    found = None
    for fd in fds:
        try:
            sock = socket.socket(fileno=fd)
        except OSError:  # no socket at all
            os.close(fd)
            continue
        try:
            listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        except OSError:
            listening = 0
        if (found is None and message == HANDOVER and len(fds) == 1 and sock.type == socket.SOCK_STREAM
                and sock.family in (socket.AF_INET, socket.AF_INET6) and listening):
            found = sock
        else:
            sock.close()
    return found


class BadRequest(Exception):
    """What the client sent is no proxy request."""


def read_head(conn: socket.socket) -> tuple[bytes, bytes]:
    """The request head up to its blank line, and what came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > HEAD_LIMIT:
            raise BadRequest("request head too long")
        chunk = conn.recv(65536)
        if not chunk:
            raise BadRequest("connection closed before the request was complete")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def parse_request(head: bytes) -> tuple[str, str, str, int]:
    """(method, target, host, port) from a CONNECT or an absolute-URI request line."""
    try:
        method, target, _version = head.split(b"\r\n", 1)[0].decode("ascii").split(" ")
    except (UnicodeDecodeError, ValueError):
        raise BadRequest("not an HTTP request line") from None
    if method == "CONNECT":
        host, sep, port = target.rpartition(":")
        if not sep or not port.isdigit() or not host:
            raise BadRequest("CONNECT needs HOST:PORT")
        return method, target, normal(host), int(port)
    try:
        url = urlsplit(target)
        port = url.port or 80
    except ValueError:
        raise BadRequest(f"bad URL {target!r}") from None
    if url.scheme != "http" or not url.hostname:
        raise BadRequest("a proxy request needs an absolute http:// URL (https goes through CONNECT)")
    return method, target, normal(url.hostname), port


def forwarded(head: bytes, target: str) -> bytes:
    """The head for the origin server: the path instead of the URL, no proxy headers, one request only."""
    lines = head.decode("latin-1").split("\r\n")
    method, _, version = lines[0].split(" ")
    url = urlsplit(target)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    kept = [line for line in lines[1:] if line and line.split(":", 1)[0].strip().lower() not in HOP_HEADERS]
    # One request per connection: the next one may be for another host, and must be judged again.
    return "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""]).encode("latin-1")


def dial(addresses: tuple[str, ...], port: int) -> socket.socket | None:
    """A connection to the first checked address that answers."""
    for address in addresses:
        try:
            return socket.create_connection((address, port), timeout=CONNECT_TIMEOUT)
        except OSError:
            continue
    return None


def relay(a: socket.socket, b: socket.socket) -> None:
    """Copy both ways until both sides are done; a half-close travels across."""
    b.settimeout(None)
    other = threading.Thread(target=pump, args=(b, a), daemon=True, name="loop-proxy")
    other.start()
    pump(a, b)
    other.join()


def pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy `src` to `dst` until EOF, then pass the half-close on; on an error cut both."""
    try:
        if not spliced(src, dst):
            copied(src, dst)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def spliced(src: socket.socket, dst: socket.socket) -> bool:
    """Move the bytes through a pipe in the kernel (splice(2)), never through Python: False where the
    kernel refuses to splice these sockets before a byte moved (the caller copies instead)."""
    r, w = os.pipe()
    try:
        s, d = src.fileno(), dst.fileno()
        size = PIPE_START
        try:
            n = os.splice(s, w, size)
        except OSError as exc:
            if exc.errno == errno.EINVAL:
                return False
            raise
        while n:
            if n == size < CHUNK:  # a download: a larger pipe, fewer calls (a small reply never pays for it)
                with contextlib.suppress(OSError):
                    size = fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, CHUNK)
            while n:
                n -= os.splice(r, d, n)
            n = os.splice(s, w, size)
        return True
    finally:
        os.close(r)
        os.close(w)


def copied(src: socket.socket, dst: socket.socket) -> None:
    buf = bytearray(PIPE_START)
    view = memoryview(buf)
    while n := src.recv_into(buf):
        dst.sendall(view[:n])


def refusal(host: str, why: str) -> bytes:
    return response(403, "Forbidden", f"loop: blocked {host} ({why})\n")


def response(code: int, reason: str, body: str) -> bytes:
    data = body.encode()
    return (f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode() + data
