"""Language-server diagnostics: what they add to an edit, and what they save a run.

1. An edit through the real write_file tool, in process: without diagnostics (the baseline), with
   `lsp` on but no server for the file's language on PATH (aim: nothing), with pylsp warm (median of
   20 edits), and the first edit of a run (pylsp starts, sandboxed).
2. A scripted model through the real `loop` entry point writes a broken calc.py (an undefined name),
   then fixes it when it learns of the error: from the edit's result (diagnostics) or from a test
   run's traceback (--no-lsp). Requests and prompt tokens (estimated: characters / 4) until the fix is
   written and until the run ends.

    python bench/bench_lsp.py [--quick]
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
VENV_BIN = str(Path(sys.executable).parent)  # pylsp, from the dev extra
BROKEN = "def area(r):\n    return pi * r * r\n"
FIXED = "import math\n\n\ndef area(r):\n    return math.pi * r * r\n"
TEST = "import calc\nassert round(calc.area(1), 2) == 3.14\nprint('ok')\n"


def edits(root: Path, diagnose, runs: int) -> list[float]:
    """Seconds of each of `runs` write_file calls that alternate a file between two contents (the file
    holds the other one before the first)."""
    from loopagent.tools.base import ToolContext
    from loopagent.tools.files import WriteFile, WriteParams
    from loopagent.tools.workspace import Workspace

    ctx = ToolContext(Workspace(root), diagnose=diagnose)
    tool, times = WriteFile(), []
    (root / "calc.py").write_text(BROKEN)
    for i in range(runs):
        args = WriteParams(path="calc.py", content=BROKEN if i % 2 else FIXED)
        start = time.perf_counter()
        tool.run(args, ctx)
        times.append(time.perf_counter() - start)
    return times


class Timed:
    """A Diagnoser that records how long each of its calls took: the time it adds to an edit."""

    def __init__(self, root: Path, path: str):
        from loopagent.lsp import Diagnoser

        env = {**os.environ, "PATH": path}
        self.inner, self.took = Diagnoser(root, True, env, env, 10.0, False), []

    def __call__(self, change, ctx) -> str:
        start = time.perf_counter()
        try:
            return self.inner(change, ctx)
        finally:
            self.took.append(time.perf_counter() - start)


def edit_costs(quick: bool) -> None:
    runs, firsts = 20, 3 if quick else 8
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        edits(root, None, runs)  # imports, caches
        none = Timed(root, "/usr/bin:/bin")
        base, absent = [], []
        for _ in range(3):  # interleaved: the machine's load changes under a long run
            base += edits(root, None, runs)
            absent += edits(root, none, runs)
        first, first_added = [], []
        for _ in range(firsts):
            cold = Timed(root, f"{VENV_BIN}:/usr/bin:/bin")
            first += edits(root, cold, 1)
            first_added += cold.took
            cold.inner.close()
        warm = Timed(root, f"{VENV_BIN}:/usr/bin:/bin")
        edits(root, warm, 2)  # the server started and the file open
        warm.took.clear()
        hot = edits(root, warm, runs)
        warm.inner.close()
    b = statistics.median(base)
    print("| write_file of a .py file | edit, median (ms) | added by diagnostics, median (ms) | ratio to baseline |")
    print("|---|---:|---:|---:|")
    print(f"| no diagnostics (baseline, {len(base)} edits) | {b * 1000:.2f} | 0 | 1.00x |")
    rows = (("lsp on, no server on PATH", absent, none.took[-len(absent):]),
            ("pylsp warm", hot, warm.took), ("first edit: pylsp starts", first, first_added))
    for label, total, added in rows:
        t = statistics.median(total)
        print(f"| {label} ({len(added)} edits) | {t * 1000:.2f} | {statistics.median(added) * 1000:.3f} "
              f"| {t / b:.2f}x |")


def model(body: dict):
    """The scripted model: write calc.py, run the test; fix calc.py on the first sign of the error."""
    from tests.fakeserver import text, tools

    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    last = results[-1] if results else ""
    if not results:
        return tools(("write_file", {"path": "calc.py", "content": BROKEN}))
    if "new error" in last or "NameError" in last:
        return tools(("write_file", {"path": "calc.py", "content": FIXED}))
    if last.startswith(("created calc.py", "wrote calc.py")):
        return tools(("shell", {"command": "PYTHONSAFEPATH= python test_calc.py"}))
    return text("done: the test passes")


def scripted_run(diagnostics: bool) -> tuple[int, int, int, int]:
    """(requests until the fix is written, their prompt tokens, requests in all, prompt tokens in all)."""
    from tests.fakeserver import FakeServer

    with tempfile.TemporaryDirectory() as tmp, FakeServer(respond=model) as fake:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        home.mkdir()
        ws.mkdir()
        (ws / "test_calc.py").write_text(TEST)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOP_", "OPENAI_"))}
        env.update(LOOP_HOME=str(home), LOOP_CTX_SIZE="16384", PATH=f"{VENV_BIN}:{env['PATH']}")
        done = subprocess.run([sys.executable, "-m", "loopagent", "agent", "-C", str(ws), "--base-url", fake.url, "--json",
                        "--approval", "all", "--no-checkpoints", *([] if diagnostics else ["--no-lsp"]),
                        "make calc.area pass test_calc.py"], env=env, capture_output=True, text=True,
                       timeout=120, check=True)
        assert (ws / "calc.py").read_text() == FIXED, done.stdout[-3000:]
        sizes = [len(json.dumps(r["messages"])) // 4 for r in fake.requests]
        fix = 1 + next(i for i, r in enumerate(fake.requests) if json.dumps(r["messages"]).count("NameError") +
                       json.dumps(r["messages"]).count("new error") > 0)
        return fix, sum(sizes[:fix]), len(sizes), sum(sizes)


def run_costs() -> None:
    off, on = scripted_run(False), scripted_run(True)
    print("\n| broken, then fixed (scripted model) | requests to the fix | prompt tokens to the fix "
          "| requests in all | prompt tokens in all |")
    print("|---|---:|---:|---:|---:|")
    for label, row in (("--no-lsp (learns from the test run)", off), ("diagnostics (learns from the edit)", on)):
        print(f"| {label} | {row[0]} | {row[1]} | {row[2]} | {row[3]} |")
    print(f"| ratio diagnostics / --no-lsp | {on[0] / off[0]:.2f}x | {on[1] / off[1]:.2f}x | {on[2] / off[2]:.2f}x "
          f"| {on[3] / off[3]:.2f}x |")


def main() -> None:
    quick = "--quick" in sys.argv
    edit_costs(quick)
    run_costs()


if __name__ == "__main__":
    main()
