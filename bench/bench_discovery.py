"""The cost of asking the server for its context size: `loop agent "hi"` against an instant fake
server, cold (no servers.json: the probe runs) and warm (the kept answer: nothing asked).
Aim: cold minus warm under 50 ms.

Baseline, in the same run: `--ctx-size 16384`, which never probes. Servers: one with llama.cpp's
`/props` (one probe request) and one that reports nothing (four requests, all 404).

    python bench/bench_discovery.py [--quick]      # --quick: 5 runs per row instead of 10
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakeserver import FakeServer, text  # noqa: E402

PROPS = {"default_generation_settings": {"n_ctx": 16384}}


def run_once(srv: FakeServer, home: Path, ws: Path, *extra: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOP_", "OPENAI_"))}
    env["LOOP_HOME"] = str(home)
    srv.add(text("hello"))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "loopagent", "agent", "-C", str(ws), "--json", "--no-checkpoints",
                           "--base-url", srv.url, *extra, "hi"], env=env, capture_output=True, text=True,
                          timeout=120)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0 or json.loads(proc.stdout.splitlines()[-1])["status"] != "completed":
        raise SystemExit(f"run failed: {proc.stdout[-400:]} {proc.stderr[-400:]}")
    return elapsed


def median_ms(srv: FakeServer, home: Path, ws: Path, reps: int, cold: bool, *extra: str) -> float:
    times = []
    run_once(srv, home, ws, *extra)  # warms the page cache and, for warm rows, servers.json
    for _ in range(reps):
        if cold:  # only the kept answers go: sessions and the rest of LOOP_HOME stay as in a warm run
            (home / "servers.json").unlink(missing_ok=True)
        times.append(run_once(srv, home, ws, *extra))
    return statistics.median(times) * 1000


def main() -> None:
    reps = 5 if "--quick" in sys.argv else 10
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        for label, props in (("llama.cpp /props", PROPS), ("reports nothing", None)):
            with FakeServer(props=props) as srv:
                home = Path(tmp) / "home"
                fixed = median_ms(srv, home, ws, reps, False, "--ctx-size", "16384")
                warm = median_ms(srv, home, ws, reps, False)
                cold = median_ms(srv, home, ws, reps, True)
                rows.append((label, fixed, warm, cold))
                shutil.rmtree(home, ignore_errors=True)
    print(f"loop agent \"hi\" against an instant fake server, median of {reps} (ms)")
    print(f"{'server':<18} {'--ctx-size N':>12} {'warm':>8} {'cold':>8} {'cold-warm':>10} {'cold/warm':>10}")
    for label, fixed, warm, cold in rows:
        print(f"{label:<18} {fixed:>12.1f} {warm:>8.1f} {cold:>8.1f} {cold - warm:>10.1f} {cold / warm:>10.2f}")
    worst = max(cold - warm for _, _, warm, cold in rows)
    print(f"aim: cold - warm under 50 ms; worst {worst:.1f} ms: {'met' if worst < 50 else 'NOT met'}")


if __name__ == "__main__":
    main()
