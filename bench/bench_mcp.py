"""MCP costs: start-up of `loop agent "hi"` with 0, 1 and 3 servers (they start in parallel), and one
call through loop's hub against the same FastMCP tool called directly with the SDK.

    python bench/bench_mcp.py [--quick]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SERVER = [sys.executable, str(ROOT / "tests" / "mcpserver.py")]  # FastMCP: ~0.5 s of CPU to import
TINY = [sys.executable, str(ROOT / "bench" / "tinymcp.py")]  # no SDK: starts in milliseconds


def startup(count: int, runs: int, server: list[str] = SERVER, nap: float = 0.0) -> float:
    from tests.fakeserver import FakeServer, text

    times = []
    with tempfile.TemporaryDirectory() as tmp, FakeServer() as fake:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        home.mkdir()
        ws.mkdir()
        servers = {f"s{i}": {"command": server[0], "args": server[1:], "env": {"STARTUP_NAP": str(nap)} if nap else {}}
                   for i in range(count)}
        (home / "config.json").write_text(json.dumps({"mcp_servers": servers}))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOP_", "OPENAI_"))}
        env.update(LOOP_HOME=str(home), LOOP_CTX_SIZE="16384")
        for _ in range(runs):
            fake.add(text("hi"))
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "loopagent", "agent", "-C", str(ws), "--base-url", fake.url,
                                   "--json", "--no-checkpoints", "hi"], env=env, capture_output=True, text=True,
                                   timeout=60, check=True)
            times.append(time.perf_counter() - start)
            assert "did not start" not in done.stderr, done.stderr  # every server's tools were offered
    return statistics.median(times)


def calls(runs: int) -> tuple[float, float]:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from loopagent.cancel import Cancel
    from loopagent.mcp.client import Hub
    from loopagent.mcp.settings import ServerConfig

    async def direct() -> float:
        params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
        async with stdio_client(params, errlog=open(os.devnull, "w")) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                await s.call_tool("read_note", {"name": "x"})
                times.append(time.perf_counter() - start)
            return statistics.median(times)

    with tempfile.TemporaryDirectory() as tmp:
        hub = Hub({"notes": ServerConfig(command=SERVER[0], args=SERVER[1:])}, Path(tmp), os.environ, Path(tmp))
        hub.start()
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            hub.call("notes", "read_note", {"name": "x"}, Cancel())
            times.append(time.perf_counter() - start)
        hub.close()
    return statistics.median(times), anyio.run(direct)


def main() -> None:
    quick = "--quick" in sys.argv
    runs = 3 if quick else 8
    print(f"| start-up of loop agent \"hi\" with MCP servers | median of {runs} (ms) | ratio to 0 servers "
          "| 3 minus 1 (ms) |")
    print("|---|---:|---:|---:|")
    base = startup(0, runs)
    print(f"| 0 MCP servers | {base * 1000:.0f} | 1.00x | |")
    # A FastMCP server spends ~0.5 s of CPU importing the SDK: three of them on 2 cores wait for the CPU.
    # The tiny server napping 1 s is slow to start without using the CPU: that row is loop's parallelism.
    for label, server, nap in (("FastMCP", SERVER, 0.0), ("tiny, 1 s to start (idle)", TINY, 1.0)):
        one, three = startup(1, runs, server, nap), startup(3, runs, server, nap)
        print(f"| 1 {label} | {one * 1000:.0f} | {one / base:.2f}x | |")
        print(f"| 3 {label} | {three * 1000:.0f} | {three / base:.2f}x | {(three - one) * 1000:+.0f} |")
    via_hub, direct = calls(20 if quick else 200)
    print("\n| one call of read_note | median (ms) |")
    print("|---|---:|")
    print(f"| SDK directly | {direct * 1000:.2f} |")
    print(f"| loop's hub (thread hop) | {via_hub * 1000:.2f} |")
    print(f"| overhead | {(via_hub - direct) * 1000:.2f} |")


if __name__ == "__main__":
    main()
