"""`loop doctor` wall time against an instant local fake server (aim: under 1 s), against `loop --help`.

    python bench/bench_doctor.py [--quick]

The server (tests/fakeserver.py, real HTTP on 127.0.0.1) answers at once, so the numbers are loop's
own cost: start-up, config, the model list, the context probe and four short chat requests.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPED = '{"answer": "mauve-7"}'  # the reply to doctor's schema question (loopagent/output/probe.py)
sys.path.insert(0, str(ROOT))

from tests.fakeserver import FakeServer, completion, empty_stream, text, tools  # noqa: E402

READ = ("read_file", {"path": "README.md"})
PROPS = {"default_generation_settings": {"n_ctx": 8192}}


def median_wall(args: list[str], runs: int, env: dict[str, str], before: Callable[[], None] = lambda: None) -> float:
    times = []
    for _ in range(runs):
        before()
        start = time.perf_counter()
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    runs = 3 if "--quick" in sys.argv else 10
    py = sys.executable
    home = tempfile.mkdtemp(prefix="bench-doctor-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOP_", "OPENAI_"))}
    env.update(LOOP_HOME=home, NO_COLOR="1")
    doctor = [py, "-m", "loopagent", "doctor", "-C", home, "--base-url"]
    with FakeServer(models=["fake"], props=PROPS) as good, FakeServer(models=["fake"]) as empty:
        cases = [
            ("loop --help (baseline)", [py, "-m", "loopagent", "--help"], lambda: None),
            ("loop doctor, good server", [*doctor, good.url],
             lambda: good.add(text("ok"), tools(READ), completion(calls=[READ]), text(SHAPED))),
            ("loop doctor, empty tool stream", [*doctor, empty.url],
             lambda: empty.add(text("ok"), empty_stream(), completion(calls=[READ]), text(SHAPED))),
            ("loop doctor, nothing listening", [*doctor, "http://127.0.0.1:9/v1"], lambda: None),
        ]
        base = None
        print(f"| command | median of {runs} (ms) | ratio to loop --help |")
        print("|---|---:|---:|")
        for label, args, before in cases:
            t = median_wall(args, runs, env, before)
            base = base or t
            print(f"| {label} | {t * 1000:.0f} | {t / base:.1f}x |")


if __name__ == "__main__":
    main()
