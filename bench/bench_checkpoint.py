"""Checkpoints on a generated workspace: first full snapshot, incremental snapshot after a
one-file change (aim: under 0.5 s at 20,000 files), an unchanged snapshot, and an undo.

Baseline, on the same tree in the same run: plain `git add -A && git commit` with its own
git directory (what a naive shadow repository would do).

    python bench/bench_checkpoint.py [--quick]      # --quick: 2,000 files
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loopagent.checkpoint import Timeline  # noqa: E402

ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "b",
       "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"}


def generate(root: Path, files: int) -> None:
    """`files` small source files, 100 per directory, two levels deep."""
    for i in range(files):
        d = root / f"pkg{i // 1000}" / f"mod{(i // 100) % 10}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.py").write_text(f"# file {i}\n" + "def f(x):\n    return x + 1\n" * 8)


def git_baseline(ws: Path, git_dir: Path) -> float:
    t0 = time.perf_counter()
    for args in (["add", "-A"], ["commit", "-qm", "snapshot", "--allow-empty"]):
        subprocess.run(["git", f"--git-dir={git_dir}", f"--work-tree={ws}", *args], cwd=ws, env=ENV,
                       check=True, capture_output=True, timeout=600)
    return time.perf_counter() - t0


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    quick = "--quick" in sys.argv
    files = 2_000 if quick else 20_000
    reps = 3 if quick else 5
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        ws = tmp_path / "ws"
        generate(ws, files)
        target = ws / "pkg0" / "mod0" / "f0.py"

        first, base_first = [], []
        for r in range(reps):
            home = tmp_path / f"home{r}"
            first.append(timed(lambda home=home: Timeline.open(home, ws).checkpoint("before edit_file", "s", 2)))
            git_dir = tmp_path / f"base{r}.git"
            subprocess.run(["git", "init", "-q", f"--separate-git-dir={git_dir}", str(tmp_path / f"w{r}")],
                           env=ENV, check=True, capture_output=True, timeout=60)
            shutil.rmtree(tmp_path / f"w{r}")
            base_first.append(git_baseline(ws, git_dir))

        timeline = Timeline.open(tmp_path / "home0", ws)
        base_dir = tmp_path / "base0.git"
        incr, base_incr, same = [], [], []
        for r in range(reps * 2):
            target.write_text(f"# change {r}\n")
            incr.append(timed(lambda r=r: timeline.checkpoint(f"before edit_file {r}", "s", 10 + r)))
            base_incr.append(git_baseline(ws, base_dir))
            same.append(timed(lambda: timeline.checkpoint("unchanged", "s", 99)))
        undo = [timed(timeline.undo) for _ in range(3)]

        print(f"checkpoints of a workspace of {files:,} files (median of {reps} / {reps * 2} runs)")
        print(f"{'operation':<34} {'loop s':>8} {'git add -A && commit s':>23} {'ratio':>7}")
        rows = [("first full snapshot", first, base_first), ("incremental, one file changed", incr, base_incr),
                ("unchanged (skipped, no commit)", same, base_incr)]
        for name, ours, base in rows:
            o, b = statistics.median(ours), statistics.median(base)
            print(f"{name:<34} {o:>8.3f} {b:>23.3f} {o / b:>6.2f}x")
        print(f"{'undo (save + restore + verify)':<34} {statistics.median(undo):>8.3f}")
        verdict = "met" if statistics.median(incr) < 0.5 else "MISSED"
        print(f"incremental snapshot under 0.5 s: {verdict}")


if __name__ == "__main__":
    main()
