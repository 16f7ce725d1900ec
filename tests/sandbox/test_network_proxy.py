"""The allowlist proxy in-process (loopagent/sandbox/proxy.py): real sockets, loopback origin servers, an
injected resolver mapping test names to 127.0.0.1. Through the sandbox and `loop`: test_network_e2e.py."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from loopagent.sandbox.bridge import HANDOVER
from loopagent.sandbox.hosts import rules_from
from loopagent.sandbox.proxy import Door, Proxy, read_hosts, resolver_for, socket_parent
from tests.conftest import wait_for
from tests.sandbox.origin import Origin

NAMES = {"pkg.test": ["127.0.0.1"], "other.test": ["127.0.0.1"], "a.wild.test": ["127.0.0.1"]}


@pytest.fixture
def origin() -> Iterator[Origin]:
    with Origin() as o:
        yield o


def proxy_for(allow, deny=()) -> Proxy:
    return Proxy(rules_from(allow, deny), resolver_for(NAMES, lambda host, port: []))


def hand_over(door: Door, fds=None) -> int:
    """What bridge.py does inside the sandbox: a loopback listener, sent through the door; its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(door.path)
        socket.send_fds(s, [HANDOVER], fds or [listener.fileno()])
    port = listener.getsockname()[1]
    listener.close()  # the proxy holds its own copy
    return port


def opened(proxy: Proxy) -> int:
    return hand_over(proxy.open_door())


def ask(port: int, head: str, then: bytes = b"") -> bytes:
    """Send a request head to the proxy port (and `then` after a tunnel is up); all it answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head.encode())
        if then:
            reply = b""
            while b"\r\n\r\n" not in reply:
                reply += s.recv(4096)
            if not reply.startswith(b"HTTP/1.1 200"):
                return reply
            s.sendall(then)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        return data


def get(door: int, host: str, port: int) -> bytes:
    return ask(door, f"GET http://{host}:{port}/x HTTP/1.1\r\nHost: {host}:{port}\r\nProxy-Connection: keep-alive\r\n\r\n")


def test_an_allowed_name_is_forwarded_and_another_refused_with_a_403_naming_host_and_rule(origin):
    proxy = proxy_for(["pkg.test"])
    try:
        door = proxy.open_door()
        port = hand_over(door)
        assert get(port, "pkg.test", origin.port).endswith(b"hello pkg.test")
        refused = get(port, "other.test", origin.port)
        assert refused.startswith(b"HTTP/1.1 403 Forbidden")
        assert refused.endswith(f"loop: blocked other.test:{origin.port} (not in network_allow)\n".encode())
        assert origin.hosts == ["pkg.test"]  # the refused request never left
        assert door.lines() == [f"network: blocked other.test:{origin.port} (not in network_allow)"]
    finally:
        proxy.close()


def test_connect_tunnels_to_an_allowed_name_only(origin):
    proxy = proxy_for(["pkg.test"])
    try:
        door = opened(proxy)
        inner = b"GET / HTTP/1.1\r\nHost: pkg.test\r\nConnection: close\r\n\r\n"  # TLS would pass the same way
        tunnelled = ask(door, f"CONNECT pkg.test:{origin.port} HTTP/1.1\r\n\r\n", inner)
        assert tunnelled.endswith(b"hello pkg.test")
        refused = ask(door, f"CONNECT other.test:{origin.port} HTTP/1.1\r\n\r\n", inner)
        assert refused.startswith(b"HTTP/1.1 403") and b"blocked other.test" in refused
        assert origin.hosts == ["pkg.test"]
    finally:
        proxy.close()


def test_a_name_resolving_to_loopback_is_refused_through_a_wildcard_unless_named(origin):
    proxy = proxy_for(["*.wild.test"])
    try:
        refused = get(opened(proxy), "a.wild.test", origin.port)
        assert refused.startswith(b"HTTP/1.1 403") and b"local address 127.0.0.1" in refused
        direct = get(opened(proxy), "127.0.0.1", origin.port)  # an address is a host like any other
        assert direct.startswith(b"HTTP/1.1 403") and b"not in network_allow" in direct
    finally:
        proxy.close()
    proxy = proxy_for(["*.wild.test", "a.wild.test"])
    try:
        assert get(opened(proxy), "a.wild.test", origin.port).endswith(b"hello a.wild.test")
    finally:
        proxy.close()


def test_what_is_no_proxy_request_gets_a_400(origin):
    proxy = proxy_for(["pkg.test"])
    try:
        door = opened(proxy)
        assert ask(door, "GET /x HTTP/1.1\r\nHost: pkg.test\r\n\r\n").startswith(b"HTTP/1.1 400")
        assert ask(door, "CONNECT pkg.test HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")
        assert ask(door, "GET https://pkg.test/ HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")
    finally:
        proxy.close()
    assert origin.hosts == []


def test_many_parallel_requests_all_complete(origin):
    proxy = proxy_for(["pkg.test"])
    try:
        door = opened(proxy)
        with ThreadPoolExecutor(64) as pool:
            replies = list(pool.map(lambda _: get(door, "pkg.test", origin.port), range(100)))
        assert all(r.endswith(b"hello pkg.test") for r in replies)
        assert len(origin.hosts) == 100
    finally:
        proxy.close()


def test_closing_cuts_open_tunnels_and_removes_the_sockets(origin):
    proxy = proxy_for(["pkg.test"])
    client = socket.create_connection(("127.0.0.1", opened(proxy)), timeout=10)
    client.sendall(f"CONNECT pkg.test:{origin.port} HTTP/1.1\r\n\r\n".encode())
    assert client.recv(4096).startswith(b"HTTP/1.1 200")
    before = {t for t in threading.enumerate() if t.name == "loop-proxy"}
    assert before
    proxy.close()
    assert client.recv(4096) == b""  # the tunnel was cut, though the origin would have kept it open
    client.close()
    assert not os.path.exists(proxy.dir)
    wait_for(lambda: not any(t.is_alive() for t in before), timeout=10)


def test_a_hosts_file_pins_names_to_addresses(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("# a local mirror\n127.0.0.1 pkg.test  Mirror.Test. # both\nnot-an-address x.test\n")
    assert read_hosts(str(hosts)) == {"pkg.test": ["127.0.0.1"], "mirror.test": ["127.0.0.1"]}
    resolve = resolver_for(read_hosts(str(hosts)), lambda host, port: ["8.8.8.8"])
    assert resolve("pkg.test", 80) == ["127.0.0.1"] and resolve("pypi.org", 443) == ["8.8.8.8"]


def test_the_door_takes_only_a_listening_tcp_socket(origin, tmp_path):
    proxy = proxy_for(["pkg.test"])
    try:
        door = proxy.open_door()
        connected = socket.create_connection(("127.0.0.1", origin.port), timeout=10)
        with open(tmp_path / "f", "w") as f:
            for fd in (f.fileno(), connected.fileno()):  # a file, a connected socket: no listener
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.connect(door.path)
                    socket.send_fds(s, [HANDOVER], [fd])
                    assert s.recv(1) == b""  # heard and closed
                assert door.inside is None
        connected.close()
        assert get(hand_over(door), "pkg.test", origin.port).endswith(b"hello pkg.test")
    finally:
        proxy.close()


def test_a_call_refused_many_hosts_names_twenty_and_counts_the_rest(origin):
    proxy = proxy_for([])
    try:
        door = proxy.open_door()
        port = hand_over(door)
        for i in range(25):
            assert get(port, f"h{i}.test", 80).startswith(b"HTTP/1.1 403")
        get(port, "h0.test", 80)  # a host already named is not counted again
        lines = door.lines()
        assert lines[0] == "network: blocked h0.test (not in network_allow)" and len(lines) == 21
        assert lines[-1] == "network: blocked 5 more requests to other hosts"
    finally:
        proxy.close()


def test_the_sockets_never_live_in_the_workspace(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "ws" / "tmp"))  # $TMPDIR inside the workspace
    (tmp_path / "ws" / "tmp").mkdir(parents=True)
    proxy = Proxy(rules_from(["pkg.test"]), workspace=str(tmp_path / "ws"))
    try:
        assert not proxy.open_door().path.startswith(str(tmp_path / "ws"))
    finally:
        proxy.close()
    assert socket_parent("") == "/tmp"  # a path too long for a socket's name
    monkeypatch.setattr(tempfile, "tempdir", "/var/tmp")
    assert socket_parent(str(tmp_path / "ws")) == "/var/tmp"  # elsewhere, $TMPDIR is where it goes
