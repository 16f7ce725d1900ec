"""A loopback origin server for the network-by-host tests: answers `hello HOST` and records each Host."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Server(ThreadingHTTPServer):
    request_queue_size = 256  # the default 5 drops a burst of connects for a second (SYN retries)
    daemon_threads = True


class Origin:
    """`with Origin() as o`: o.port, o.hosts (the Host header of every request, in order)."""

    def __init__(self) -> None:
        self.hosts: list[str] = []
        origin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
                origin.hosts.append(host)
                body = f"hello {host}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]

    def __enter__(self) -> Origin:
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
