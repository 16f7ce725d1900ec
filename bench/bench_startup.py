"""Start-up time: `loop --help`, `loop agent --help` and a cold one-request run against a bare interpreter.

The cold run is `loop agent --json "Hi."` against an instant local server (the tests' fake, on 127.0.0.1)
with a fresh `$LOOP_HOME` each time: what a script pays per call.

    python bench/bench_startup.py [--quick] [--before DIR]

`--before DIR`: also time DIR's loopagent (a checkout of an earlier commit, its bytecode compiled) in the
same run, with this interpreter and packages, for a before/after column.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakeserver import FakeServer, text  # noqa: E402


def median_wall(args: list[str], runs: int, env: dict[str, str] | None = None, fresh_home: bool = False) -> float:
    times = []
    for _ in range(runs):
        run_env = dict(env or os.environ)
        with tempfile.TemporaryDirectory() as home:
            if fresh_home:
                run_env["LOOP_HOME"] = home
            start = time.perf_counter()
            subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False,
                           env=run_env)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    runs = 3 if "--quick" in sys.argv else 10
    before = Path(sys.argv[sys.argv.index("--before") + 1]).resolve() if "--before" in sys.argv else None
    py = sys.executable
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOP_", "OPENAI_"))}
    old_env = {**env, "PYTHONPATH": str(before)} if before else None
    with FakeServer([text("Hello.")] * (2 * runs + 2)) as srv, tempfile.TemporaryDirectory() as ws:
        cases = [
            ("python -c pass (baseline)", [py, "-c", "pass"], False),
            ("loop --help", [py, "-m", "loopagent", "--help"], False),
            ("loop agent --help", [py, "-m", "loopagent", "agent", "--help"], False),
            ("loop agent --json \"Hi.\" (cold, fresh LOOP_HOME)",
             [py, "-m", "loopagent", "agent", "-C", ws, "--base-url", srv.url, "--json", "Hi."], True),
        ]
        base = None
        extra = " before (ms) | now / before |" if before else ""
        print(f"| command | median of {runs} (ms) | ratio to bare python |{extra}")
        print("|---|---:|---:|" + ("---:|---:|" if before else ""))
        for label, args, fresh in cases:
            t = median_wall(args, runs, env, fresh)
            base = base or t
            row = f"| {label} | {t * 1000:.0f} | {t / base:.1f}x |"
            if old_env is not None and args[1] == "-m":
                was = median_wall(args, runs, old_env, fresh)
                row += f" {was * 1000:.0f} | {t / was:.2f}x |"
            elif old_env is not None:
                row += " | |"
            print(row)

if __name__ == "__main__":
    main()
