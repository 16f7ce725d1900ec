"""`loop eval` reports skill use: a task naming `expect_skill` gets `skill_loaded` in its result line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopagent.eval.suite import SuiteError, load_suite
from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import Reply, text, tools

SUITE = """
[[task]]
id = "fires"
prompt = "TASK-FIRES: release it"
repo = "repo"
check = "true"
expect_skill = "release"

[[task]]
id = "misses"
prompt = "TASK-MISSES: release it"
repo = "repo"
check = "true"
expect_skill = "release"
"""


def model(body: dict) -> Reply:
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    loaded = any(m["role"] == "tool" for m in body["messages"])
    if "TASK-FIRES" in prompt and not loaded:
        return tools(("load_skill", {"name": "release"}))
    return text("Released.")


def test_results_say_whether_each_run_loaded_the_skill(tmp_path: Path, loop_home: Path, server) -> None:
    skill = tmp_path / "repo" / ".agents" / "skills" / "release"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: release\ndescription: How we release.\n---\nTag it.\n")
    (tmp_path / "suite.toml").write_text(SUITE)
    server.add(*[model] * 6)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "loopagent", "eval", str(tmp_path / "suite.toml"), "--out", str(out),
                           "--base-url", server.url, "--ctx-size", "16384", *where_shells_run()],
                          capture_output=True, text=True, timeout=120, env=clean_env(loop_home), stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = {line["id"]: line for line in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert lines["fires"]["skill_loaded"] is True and lines["misses"]["skill_loaded"] is False


def test_expect_skill_must_name_a_skill(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    suite = tmp_path / "suite.toml"
    suite.write_text("[[task]]" + SUITE.split("[[task]]")[1].replace('"release"', '""'))
    with pytest.raises(SuiteError, match="'expect_skill' must be a skill's name"):
        load_suite(suite)
    suite.write_text(SUITE)
    assert [t.expect_skill for t in load_suite(suite)] == ["release", "release"]
