"""Agent Skills at start-up: discovery (every SKILL.md's front matter) and the catalog for the system prompt,
for 10, 100 and 1,000 skills (aim: under 50 ms at 100), and the catalog's prompt tokens at two windows.

Baseline, on the same folders in the same run: the format's reference library reading each skill's properties
(`skills_ref.read_properties`, strictyaml), which is what a plain implementation would call.

    python bench/bench_skills.py [--quick]      # --quick: fewer repetitions
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loopagent.context import estimate_tokens  # noqa: E402
from loopagent.skills import build_catalog, discover  # noqa: E402

SIZES = (10, 100, 1000)
WINDOWS = (16_384, 131_072)


def generate(root: Path, n: int) -> None:
    """`n` skills of a realistic size: a two-sentence description, a page of instructions, two files."""
    for i in range(n):
        folder = root / ".agents" / "skills" / f"skill-{i:04d}"
        (folder / "references").mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:04d}\ndescription: Handles task family {i} of the project, such as builds, "
            f"releases and migrations. Use it when the user asks about family {i}.\nlicense: MIT\n"
            f"metadata:\n  author: team\n---\n" + "Step: do the careful thing and check it.\n" * 40)
        (folder / "references" / "notes.md").write_text("notes\n")


def timed(fn, reps: int) -> float:
    """Median milliseconds of `reps` calls."""
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return statistics.median(out)


def main() -> None:
    reps = 5 if "--quick" in sys.argv else 15
    try:
        import skills_ref
    except ImportError:
        skills_ref = None
    print(f"{'skills':>7} {'loop ms':>9} {'skills-ref ms':>14} {'ratio':>6}   "
          + "   ".join(f"catalog @{w // 1024}k: tokens chars listed" for w in WINDOWS))
    for n in SIZES:
        with tempfile.TemporaryDirectory() as tmp:
            print(row(n, Path(tmp), reps, skills_ref))


def row(n: int, tmp: Path, reps: int, skills_ref) -> str:
    """One line of the table: `n` skills generated under `tmp`, timed against the reference library."""
    ws, home, user = tmp / "ws", tmp / "home", tmp / "user"
    generate(ws, n)
    ours = timed(lambda: build_catalog(discover(ws, home, user).skills, WINDOWS[0]), reps)
    folders = sorted((ws / ".agents" / "skills").iterdir())
    theirs = timed(lambda: [skills_ref.read_properties(f) for f in folders], max(1, reps // 3)) \
        if skills_ref else float("nan")
    found = discover(ws, home, user).skills
    cells = []
    for window in WINDOWS:
        catalog = build_catalog(found, window)
        cells.append(f"{estimate_tokens(catalog.text):>22} {len(catalog.text):>5} {len(catalog.listed):>6}")
    return f"{n:>7} {ours:>9.1f} {theirs:>14.1f} {theirs / ours:>5.1f}x   " + "   ".join(cells)

if __name__ == "__main__":
    main()
