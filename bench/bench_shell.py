"""Shell call overhead: the shell tool sandboxed (bwrap) and unsandboxed, against a bare subprocess.run
(and the same bwrap command line run bare, to split bwrap's own cost from the tool's).

    python bench/bench_shell.py            # median of 50 calls per cell
    python bench/bench_shell.py --quick    # median of 10

All of them run `bash -c CMD` in the same temporary git workspace, in the same run, interleaved
(one call of each in turn) so machine noise falls on all of them alike. The bwrap probe runs
once, before timing, as it does once per loop process.
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
from loopagent.sandbox.bwrap import bwrap_argv  # noqa: E402
from loopagent.sandbox.containment import processes  # noqa: E402
from loopagent.sandbox.layout import place_stubs, remove_mount_points, survey  # noqa: E402
from loopagent.tools.base import ToolContext  # noqa: E402
from loopagent.tools.shell import Shell, ShellParams  # noqa: E402
from loopagent.tools.workspace import Workspace  # noqa: E402


def measure(command: str, runs: int, ws: Path, env: dict, plain: ToolContext, boxed: ToolContext,
            executor) -> dict[str, list[float]]:
    """Milliseconds per call of each way to run `command`, one of each in turn, first round dropped."""
    params = ShellParams(command=command)
    layout = survey(executor.spec)
    raw = bwrap_argv(executor.spec, layout, ["bash", "-c", command], executor.bwrap)

    def bare_bwrap():  # with the placeholders the executor writes and removes around each call
        place_stubs(layout)
        subprocess.run(raw, cwd=ws, env=env, stdin=subprocess.DEVNULL, capture_output=True)
        remove_mount_points(layout.mount_points())

    ways = {
        "bare": lambda: subprocess.run(["bash", "-c", command], cwd=ws, env=env, stdin=subprocess.DEVNULL,
                                       capture_output=True),
        "plain": lambda: Shell().run(params, plain),
        "boxed": lambda: Shell().run(params, boxed),
        "bwrap": bare_bwrap,
    }
    cells: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(runs + 1):
        for name, fn in ways.items():
            t = time.perf_counter()
            fn()
            cells[name].append((time.perf_counter() - t) * 1000)
    return {name: times[1:] for name, times in cells.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="median of 10 instead of 50")
    opts = ap.parse_args()
    runs = 10 if opts.quick else 50
    with tempfile.TemporaryDirectory(prefix="loop-bench-") as tmp:
        ws = Path(tmp)
        subprocess.run(["git", "init", "-q", str(ws)], check=True, timeout=30)
        env = dict(os.environ)
        t = time.perf_counter()
        sandbox = open_sandbox(spec_from("workspace-write", ws, env), env)
        probe_ms = (time.perf_counter() - t) * 1000
        if sandbox.state != "sandboxed":
            sys.exit(f"no sandbox here: {sandbox.problem}")
        plain = ToolContext(Workspace(ws), env=env)
        boxed = ToolContext(Workspace(ws), env=env, executor=sandbox.executor)
        print(f"median of {runs} calls each, interleaved; probe once: {probe_ms:.1f} ms; "
              f"{len(processes())} processes on this machine (the kill sweep reads them all)\n")
        print(f"{'command':16} {'subprocess.run':>15} {'shell tool':>11} {'ratio':>6} {'sandboxed':>10} "
              f"{'ratio':>6} {'sandbox adds':>13} {'bare bwrap':>11}")
        for command in ("true", f"{sys.executable} -c pass"):
            cells = measure(command, runs, ws, env, plain, boxed, sandbox.executor)
            bare, ours, box, raw_ms = (statistics.median(cells[k]) for k in ("bare", "plain", "boxed", "bwrap"))
            label = "python -c pass" if command != "true" else "true"
            print(f"{label:16} {bare:13.1f}ms {ours:9.1f}ms {ours / bare:5.2f}x {box:8.1f}ms {box / bare:5.2f}x "
                  f"{box - ours:+11.1f}ms {raw_ms:9.1f}ms")
        print("\nbare bwrap: subprocess.run of the same bwrap command line, without the tool's output "
              "handling, kill sweep and wait for the namespace to be gone")


if __name__ == "__main__":
    main()
