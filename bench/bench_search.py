"""grep and list_files: our tools against running `rg` directly and against the Python fallback.

    python bench/bench_search.py            # 20,000 files / 200 MB
    python bench/bench_search.py --quick    # 2,000 files / 20 MB

The tree is generated in a temporary directory (with a .gitignore'd build/ directory) and
read once before timing, so every number is a warm-cache wall time. Medians of several runs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loopagent.tools.base import ToolContext  # noqa: E402
from loopagent.tools.search import Grep, GrepParams, ListFiles, ListParams, find_rg  # noqa: E402
from loopagent.tools.workspace import Workspace  # noqa: E402

WORDS = ("alpha beta gamma delta value result config handler request response buffer index parser token "
         "stream client server module import return class def self items error retry limit cache").split()


def generate(root: Path, files: int, total_bytes: int, seed: int = 7) -> None:
    """`files` files of about total_bytes/files each in 100-file directories; 1% contain NEEDLE_42."""
    rng = random.Random(seed)
    lines = [" ".join(rng.choices(WORDS, k=rng.randint(4, 12))) + "\n" for _ in range(4000)]
    pool = "".join(lines * 4)
    size = total_bytes // files
    (root / ".gitignore").write_text("build/\n*.tmp\n")
    for i in range(files):
        d = root / ("build" if i % 50 == 49 else f"pkg{i // 100:03}")
        d.mkdir(exist_ok=True)
        start = rng.randrange(0, len(pool) - size - 1)
        start = pool.index("\n", start) + 1
        body = pool[start : start + size]
        if i % 100 == 0:
            body = body[: size // 2] + "    NEEDLE_42 = compute(value)\n" + body[size // 2 :]
        ext = (".py", ".ts", ".md", ".tmp")[i % 4]
        (d / f"file{i:05}{ext}").write_text(body)


def median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm up: page cache, imports
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def rg_direct(rg: str, root: Path, args: list[str]) -> Callable[[], bytes]:
    """rg with the same file selection our tool uses (hidden files in, .gitignore without git)."""
    cmd = [rg, "--hidden", "--no-require-git", *args]
    # stdin must not be a pipe: rg without a path argument would search stdin instead of the tree.
    return lambda: subprocess.run(cmd, cwd=root, stdin=subprocess.DEVNULL, capture_output=True).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="2,000 files / 20 MB, fewer runs")
    ap.add_argument("--runs", type=int, default=None)
    opts = ap.parse_args()
    files, size = (2_000, 20_000_000) if opts.quick else (20_000, 200_000_000)
    runs = opts.runs or (3 if opts.quick else 7)
    rg = find_rg()
    if rg is None:
        sys.exit("rg not found: pip install ripgrep==14.1.0")
    with tempfile.TemporaryDirectory(prefix="loop-bench-") as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        generate(root, files, size)
        print(f"tree: {files} files, {size / 1e6:.0f} MB, generated in {time.perf_counter() - t:.1f} s; "
              f"median of {runs} runs (fallback: {max(1, runs // 3)}), warm cache, {rg}\n")
        ctx = ToolContext(Workspace(root))
        cases = [
            ("grep NEEDLE_42", ["-n", "--no-heading", "NEEDLE_42"], GrepParams(pattern="NEEDLE_42"), Grep),
            ("grep -i needle_42 --glob *.py", ["-n", "--no-heading", "-i", "-g", "*.py", "needle_42"],
             GrepParams(pattern="needle_42", ignore_case=True, glob="*.py"), Grep),
            ("list_files", ["--files"], ListParams(), ListFiles),
            ("list_files **/*.py", ["--files", "-g", "**/*.py"], ListParams(pattern="**/*.py"), ListFiles),
        ]
        print(f"{'operation':32} {'rg direct':>10} {'loop tool':>10} {'ratio':>6} {'fallback':>10} {'ratio':>7}")
        for label, rg_args, params, tool in cases:
            direct = median_ms(rg_direct(rg, root, rg_args), runs)
            ours = median_ms(lambda tool=tool, params=params: tool(rg).run(params, ctx), runs)
            slow = median_ms(lambda tool=tool, params=params: tool(None).run(params, ctx), max(1, runs // 3))
            print(f"{label:32} {direct:8.1f}ms {ours:8.1f}ms {ours / direct:5.2f}x {slow:8.1f}ms "
                  f"{slow / direct:6.1f}x")


if __name__ == "__main__":
    main()
