"""Start-up time: `loop --help` and `loop agent --help` against a bare interpreter.

    python bench/bench_startup.py [--quick]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def median_wall(args: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    runs = 3 if "--quick" in sys.argv else 10
    py = sys.executable
    cases = [
        ("python -c pass (baseline)", [py, "-c", "pass"]),
        ("loop --help", [py, "-m", "loopagent", "--help"]),
        ("loop agent --help", [py, "-m", "loopagent", "agent", "--help"]),
    ]
    base = None
    print(f"| command | median of {runs} (ms) | ratio to bare python |")
    print("|---|---:|---:|")
    for label, args in cases:
        t = median_wall(args, runs)
        base = base or t
        print(f"| {label} | {t * 1000:.0f} | {t / base:.1f}x |")


if __name__ == "__main__":
    main()
