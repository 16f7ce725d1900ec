"""The tripwire's cost: what loop adds to every shell call to compare git metadata before and after it
(loopagent/sandbox/tripwire.py), and the sandboxed shell call with it against without it.

    python bench/bench_tripwire.py            # median of 200 checks / 50 calls per cell
    python bench/bench_tripwire.py --quick    # median of 30 / 10

First table: one check (the snapshot before the command plus the comparison after it, nothing
changed) in a git workspace holding 1, 10 and 100 repositories (nested ones made by `git init`),
and in one with 1,000 plain directories: the walk looks at every directory it may go into (one
lstat each while a directory's ctime stays as it was, a listing when it changed).
Second table: the shell tool running `true` in bwrap, with the tripwire and with it switched off
for the bench (its two functions replaced by no-ops), interleaved so machine noise falls on both.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loopagent.sandbox import open_sandbox, spec_from, tripwire  # noqa: E402
from loopagent.tools.base import ToolContext  # noqa: E402
from loopagent.tools.shell import Shell, ShellParams  # noqa: E402
from loopagent.tools.workspace import Workspace  # noqa: E402


def workspace(where: Path, repos: int, dirs: int = 0) -> Path:
    """A git workspace with `repos` - 1 nested repositories and `dirs` plain directories (10 per level-1 dir)."""
    where.mkdir()
    subprocess.run(["git", "init", "-q", str(where)], check=True, timeout=30)
    (where / "src").mkdir()
    for i in range(1, repos):
        if i == 1:
            subprocess.run(["git", "init", "-q", str(where / "fixtures" / "r1")], check=True, timeout=30)
        else:  # a copy of the first: the same files a `git init` makes, without a process each
            shutil.copytree(where / "fixtures" / "r1", where / "fixtures" / f"r{i}", symlinks=True)
    for i in range(dirs):
        (where / "src" / f"d{i // 10}" / f"e{i % 10}").mkdir(parents=True, exist_ok=True)
    return where


def check_ms(root: str, runs: int) -> list[float]:
    times = []
    for _ in range(runs + 1):
        t = time.perf_counter()
        done = tripwire.put_back(tripwire.snapshot(root))
        times.append((time.perf_counter() - t) * 1000)
        assert not done, done
    return times[1:]


def shell_ms(runs: int, ctx: ToolContext) -> dict[str, list[float]]:
    """Milliseconds per sandboxed `true`, with the tripwire and without, one of each in turn."""
    real = tripwire.snapshot, tripwire.put_back
    off = (lambda root: None, lambda before: [])
    params = ShellParams(command="true")
    cells: dict[str, list[float]] = {"with": [], "without": []}
    for _ in range(runs + 1):
        for name, funcs in (("with", real), ("without", off)):
            tripwire.snapshot, tripwire.put_back = funcs
            t = time.perf_counter()
            result = Shell().run(params, ctx)
            cells[name].append((time.perf_counter() - t) * 1000)
            assert not result.is_error, result.content
    tripwire.snapshot, tripwire.put_back = real
    return {name: times[1:] for name, times in cells.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer runs per cell")
    opts = ap.parse_args()
    checks, calls = (30, 10) if opts.quick else (200, 50)
    with tempfile.TemporaryDirectory(prefix="loop-bench-") as tmp:
        rows = (("1 repository", 1, 0), ("10 repositories", 10, 0), ("100 repositories", 100, 0),
                ("1 repository, 1,000 directories", 1, 1000))
        made = [workspace(Path(tmp) / f"ws{repos}-{dirs}", repos, dirs) for _, repos, dirs in rows]
        ws = workspace(Path(tmp) / "shell", 1)
        # What changed in the last RACY_NS is listed afresh on every check; a workspace at work is older.
        time.sleep(tripwire.RACY_NS / 1e9 + 0.1)
        print(f"the tripwire, one check per shell call: the first (nothing kept yet), then the median of {checks}\n")
        print(f"{'workspace':34} {'repos found':>11} {'first':>9} {'check':>9} {'per repo':>9}")
        for (label, _, _), where in zip(rows, made, strict=True):
            t = time.perf_counter()
            found = len(tripwire.snapshot(str(where)).repos)
            first = (time.perf_counter() - t) * 1000 * 2  # a check is two snapshots
            ms = statistics.median(check_ms(str(where), checks))
            print(f"{label:34} {found:>11} {first:7.2f}ms {ms:7.2f}ms {ms / found:7.2f}ms")
        env = dict(os.environ)
        sandbox = open_sandbox(spec_from("workspace-write", ws, env), env)
        if sandbox.state != "sandboxed":
            sys.exit(f"no sandbox here for the second table: {sandbox.problem}")
        ctx = ToolContext(Workspace(ws), env=env, executor=sandbox.executor)
        cells = shell_ms(calls, ctx)
        on, off = statistics.median(cells["with"]), statistics.median(cells["without"])
        print(f"\nsandboxed shell call (`true`, 1 repository): median of {calls}, interleaved\n")
        print(f"{'without tripwire':>17} {'with tripwire':>14} {'ratio':>6} {'tripwire adds':>14}")
        print(f"{off:15.1f}ms {on:12.1f}ms {on / off:5.2f}x {on - off:+12.1f}ms")


if __name__ == "__main__":
    main()
