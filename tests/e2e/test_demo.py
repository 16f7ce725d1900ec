"""`loop demo`: the recorded repair runs on a copy with real tools and real pytest."""

from __future__ import annotations

import hashlib

from tests.conftest import SAMPLE


def tree_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(SAMPLE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(path.relative_to(SAMPLE).as_posix().encode() + path.read_bytes())
    return h.hexdigest()


def test_demo_repairs_a_copy_and_checks_it_independently(run_loop, loop_home):
    before = tree_digest()
    proc = run_loop("demo", timeout=120, subprocess=True)  # the demo as users start it
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "starting tests: 1 failed, 3 passed" in out
    assert "independent final tests: 4 passed" in out
    assert "[3] edit_file path_rules.py" in out and "[4] shell python -m pytest -q" in out
    assert "done: completed, 5 steps" in out
    assert tree_digest() == before  # the bundled sample is never modified
    assert not loop_home.exists() or not any(loop_home.iterdir())  # nothing left in the user's home
