"""`loop eval --example`: the bundled three-task suite (recorded turns, no server) prints its summary."""

from __future__ import annotations

import json
from pathlib import Path

from tests.eval.test_suite_e2e import summary_value


def test_the_example_suite_shows_the_whole_flow(run_loop, tmp_path: Path) -> None:
    done = run_loop("eval", "--example", "-j", "3", "--out", str(tmp_path / "out"), timeout=180)
    assert done.returncode == 0, done.stderr + done.stdout
    assert [summary_value(done.stdout, k) for k in ("tasks", "verified", "completed but check failed", "limits hit")] \
        == ["3", "1", "1", "1"]
    lines = {x["id"]: x for x in map(json.loads, (tmp_path / "out" / "results.jsonl").read_text().splitlines())}
    assert {k: (v["status"], v["verified"]) for k, v in lines.items()} == {
        "fix-windows-paths": ("completed", True), "claims-done": ("completed", False),
        "step-limit": ("step_limit", False)}
    assert (tmp_path / "out" / "report.md").is_file()
