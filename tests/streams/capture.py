"""Capture one HTTP response from a local OpenAI-compatible server, byte-exact.

Usage: python capture.py NAME REQUEST.json [--port 8765] [--out DIR]
Writes DIR/NAME.sse (or NAME.json for a JSON reply): the response body after removing the
chunked transfer framing, nothing else changed; and DIR/NAME.meta.json: status, headers,
the size and arrival time of each HTTP chunk, the request sent.
A raw socket, not an HTTP library, so that no byte and no chunk boundary is normalised.
Not part of the test suite: it needs a running server (see README.md). The committed metadata
files also carry "server" and "model" keys, added by hand when the captures were copied here.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import socket
import time
from pathlib import Path


def read_all(sock):
    """Every byte until the server closes, with the arrival time of each recv."""
    start = time.monotonic()
    data, arrivals = b"", []
    while True:
        piece = sock.recv(65536)
        if not piece:
            return data, arrivals
        arrivals.append((len(data), round(time.monotonic() - start, 3)))
        data += piece


def dechunk(raw, arrivals):
    """Body bytes and [(size, seconds after the request)] of each HTTP chunk."""
    body, chunks, pos = b"", [], 0
    while True:
        eol = raw.index(b"\r\n", pos)
        size = int(raw[pos:eol].split(b";")[0], 16)
        start = eol + 2
        if size == 0:
            return body, chunks, raw[start:]
        when = max(t for off, t in arrivals if off <= start + size - 1)
        chunks.append({"size": size, "t": when})
        body += raw[start:start + size]
        assert raw[start + size:start + size + 2] == b"\r\n"
        pos = start + size + 2


def shown(request):
    """The request as recorded: a message longer than 2,000 characters is named by its size and hash."""
    out = json.loads(json.dumps(request))
    for msg in out.get("messages", []):
        text = msg.get("content")
        if isinstance(text, str) and len(text) > 2000:
            msg["content"] = {"elided_chars": len(text), "sha256": hashlib.sha256(text.encode()).hexdigest(),
                              "starts": text[:120]}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("request")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    request = json.loads(Path(args.request).read_text())
    payload = json.dumps(request).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{args.port}\r\n"
        "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    ).encode()
    sock = socket.create_connection(("127.0.0.1", args.port), timeout=600)
    started = time.monotonic()
    sock.sendall(head + payload)
    raw, arrivals = read_all(sock)
    sock.close()
    elapsed = round(time.monotonic() - started, 3)
    split = raw.index(b"\r\n\r\n")
    lines = raw[:split].decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = [list(map(str.strip, line.split(":", 1))) for line in lines[1:]]
    hmap = {k.lower(): v for k, v in headers}
    rest = raw[split + 4:]
    rest_arrivals = [(off - split - 4, t) for off, t in arrivals]
    if hmap.get("transfer-encoding", "").lower() == "chunked":
        body, chunks, trailer = dechunk(rest, rest_arrivals)
        assert trailer in (b"", b"\r\n"), trailer
    else:
        body, chunks = rest, None
    ext = "json" if "json" in hmap.get("content-type", "") else "sse"
    out = Path(args.out)
    (out / f"{args.name}.{ext}").write_bytes(body)
    meta = {
        "body_file": f"{args.name}.{ext}",
        "status": status,
        "headers": headers,
        "chunks": chunks,
        "seconds": elapsed,
        "captured": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "request": shown(request),
    }
    (out / f"{args.name}.meta.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    print(args.name, status, hmap.get("content-type"), len(body), "bytes", len(chunks or []), "chunks", elapsed, "s")


if __name__ == "__main__":
    main()
