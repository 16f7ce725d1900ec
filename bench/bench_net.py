"""Network by host: a sandboxed download through loop's proxy (bridge inside, proxy outside) against the
same download with the network on (`--network`, straight to the server).

    python bench/bench_net.py            # 50 MB x 10 downloads, 100 small requests, per way
    python bench/bench_net.py --quick    # 50 MB x 3 downloads, 100 small requests

The server is a loopback HTTP server in this process; the client is `python -c` inside bwrap, timing
each request itself (so the sandbox's start is not counted). Through the proxy the client reaches the
server by a name pinned to 127.0.0.1 by a hosts file and named in network_allow, as a local mirror would be.
Each request opens a new connection (urllib does), so the latency column includes the proxy's connect.
The CPU rows are this process's CPU time while the client ran: through the proxy, the proxy's threads.
On a machine with fewer free cores than the three busy parties (server, proxy, client) the throughput
ratio measures the scheduler as much as the proxy; the CPU row says what the proxy itself costs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loopagent.sandbox import open_sandbox, spec_from  # noqa: E402
from loopagent.sandbox.hosts import rules_from  # noqa: E402

SIZE = 50 * 1024 * 1024

# Inside the sandbox: time `downloads` fetches of /big and `small` fetches of /small; print ms per line.
CLIENT = """\
import sys, time, urllib.request
base, downloads, small, direct = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "direct"
opener = urllib.request.build_opener(urllib.request.ProxyHandler({})) if direct else urllib.request.build_opener()
def fetch(path):
    t = time.perf_counter()
    with opener.open(base + path, timeout=60) as r:
        while r.read(1 << 20):
            pass
    return (time.perf_counter() - t) * 1000
if downloads:
    print("big", *[fetch("/big") for _ in range(downloads)])
if small:
    print("small", *[fetch("/small") for _ in range(small)])
"""


# The origin, in a process of its own (a real server is elsewhere): 50 MB at /big, 2 bytes at /small.
SERVER = """\
import os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
BLOB = os.urandom(1 << 20) * 50
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        body = BLOB if self.path == "/big" else b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def run(spec, base: str, downloads: int, small: int, way: str) -> tuple[dict[str, list[float]], float]:
    """One sandboxed client run: the milliseconds of each download and each small request, and the CPU
    milliseconds this process (the proxy's threads, when proxied) spent while it ran."""
    box = open_sandbox(spec, os.environ)
    if box.state != "sandboxed":
        sys.exit(f"no sandbox here: {box.problem}")
    argv = [sys.executable, "-c", CLIENT, base, str(downloads), str(small), way]
    started = box.executor.spawn(argv, spec.workspace, dict(os.environ))
    cpu = time.process_time()
    try:
        out = started.proc.communicate(timeout=600)[0].decode()
        cpu = (time.process_time() - cpu) * 1000
    finally:
        started.close()
        box.executor.close()
    if started.proc.returncode:
        sys.exit(f"the client failed:\n{out}")
    return {line.split()[0]: [float(x) for x in line.split()[1:]] for line in out.splitlines()}, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="3 downloads instead of 10")
    opts = ap.parse_args()
    downloads, small = (3, 100) if opts.quick else (10, 100)
    server = subprocess.Popen([sys.executable, "-I", "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        cells = measure(port, downloads, small)
    finally:
        server.kill()
        server.wait()
    report(cells, downloads, small)
    starts = call_starts(10 if opts.quick else 30)
    print(f"\na sandboxed `true`, median of {len(starts['none'])}: {statistics.median(starts['none']):.1f} ms without "
          f"network, {statistics.median(starts['proxy']):.1f} ms with network_allow (the bridge's Python start)")


def call_starts(runs: int) -> dict[str, list[float]]:
    """Milliseconds of a whole sandboxed call of `true`, without network and behind the bridge, in turn."""
    with tempfile.TemporaryDirectory(prefix="loop-bench-") as tmp:
        boxes = {"none": open_sandbox(spec_from("workspace-write", Path(tmp), os.environ), os.environ),
                 "proxy": open_sandbox(spec_from("workspace-write", Path(tmp), os.environ,
                                                 hosts=rules_from(["pypi"])), os.environ)}
        times: dict[str, list[float]] = {name: [] for name in boxes}
        for i in range(runs + 1):
            for name, box in boxes.items():
                t = time.perf_counter()
                started = box.executor.spawn(["true"], tmp, dict(os.environ))
                started.proc.wait(timeout=60)
                started.close()
                if i:  # the first round warms the caches (and starts the proxy)
                    times[name].append((time.perf_counter() - t) * 1000)
        for box in boxes.values():
            box.executor.close()
    return times


def measure(port: int, downloads: int, small: int) -> dict[str, dict[str, list[float]]]:
    """Both ways, one after the other, against the server on `port`: the milliseconds of each request
    ("big", "small") and the CPU milliseconds of loop's side per request ("big cpu", "small cpu")."""
    with tempfile.TemporaryDirectory(prefix="loop-bench-") as tmp:
        ws, hosts = Path(tmp) / "ws", Path(tmp) / "hosts"
        ws.mkdir()
        hosts.write_text("127.0.0.1 mirror.bench\n")
        direct = spec_from("workspace-write", ws, os.environ, network=True)
        proxied = spec_from("workspace-write", ws, os.environ, hosts=rules_from(["mirror.bench"]),
                            hosts_file=str(hosts))
        cells: dict[str, dict[str, list[float]]] = {way: {"big": [], "small": [], "big cpu": [], "small cpu": []}
                                                    for way in ("direct", "proxy")}
        for i in range(downloads):  # interleaved rounds, so the machine's noise falls on both ways alike
            share = small // downloads + (i < small % downloads)
            for way, spec, base in (("direct", direct, f"http://127.0.0.1:{port}"),
                                    ("proxy", proxied, f"http://mirror.bench:{port}")):
                for kind, counts in (("big", (1, 0)), ("small", (0, share))):
                    times, cpu = run(spec, base, *counts, way)
                    cells[way][kind] += times[kind]
                    cells[way][f"{kind} cpu"].append(cpu / len(times[kind]))
    return cells


def report(cells: dict[str, dict[str, list[float]]], downloads: int, small: int) -> None:
    mb_s = {way: SIZE / 1e6 / (statistics.median(c["big"]) / 1000) for way, c in cells.items()}
    lat = {way: statistics.median(c["small"]) for way, c in cells.items()}
    print(f"sandboxed urllib client, loopback server; median of {downloads} downloads of 50 MB and of "
          f"{small} small requests (a new connection each), in {downloads} interleaved rounds\n")
    print(f"{'':24} {'direct (--network)':>19} {'through the proxy':>18} {'ratio':>7}")
    print(f"{'50 MB download':24} {mb_s['direct']:14.0f} MB/s {mb_s['proxy']:13.0f} MB/s "
          f"{mb_s['proxy'] / mb_s['direct']:6.2f}x")
    print(f"{'small request':24} {lat['direct']:16.2f} ms {lat['proxy']:15.2f} ms "
          f"{lat['proxy'] / lat['direct']:6.2f}x")
    cpu = {(way, kind): statistics.median(c[f"{kind} cpu"]) for way, c in cells.items() for kind in ("big", "small")}
    print(f"{'loop CPU per download':24} {cpu['direct', 'big']:16.1f} ms {cpu['proxy', 'big']:15.1f} ms")
    print(f"{'loop CPU per request':24} {cpu['direct', 'small']:16.2f} ms {cpu['proxy', 'small']:15.2f} ms")
    print(f"\nadded latency per request (median): {lat['proxy'] - lat['direct']:+.2f} ms; loop's CPU is this "
          "process's while the client ran (the proxy's threads, when proxied)")


if __name__ == "__main__":
    main()
