"""`loop eval`'s check runs code the agent wrote (a conftest.py): inside the sandbox, like its shell calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopagent.sandbox.probe import probe
from tests.conftest import clean_env
from tests.fakeserver import FakeServer, text, tools

pytestmark = pytest.mark.skipif(not probe(os.environ.get("PATH")).works, reason="bubblewrap cannot run here")


def test_code_the_agent_planted_for_the_check_cannot_write_outside_the_copy(tmp_path: Path, loop_home: Path):
    canary = loop_home / "planted"  # the user's $LOOP_HOME: hidden inside the sandbox, never written
    loop_home.mkdir(parents=True, exist_ok=True)
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    suite = tmp_path / "suite.toml"
    suite.write_text('[[task]]\nid = "plant"\nprompt = "add a conftest"\nrepo = "repo"\n'
                     'check = "python -m pytest -q -p no:cacheprovider"\n')
    planted = f"open({str(canary)!r}, 'w').write('pwned')\n"
    out = tmp_path / "out"
    with FakeServer([tools(("write_file", {"path": "conftest.py", "content": planted})), text("done")]) as server:
        done = subprocess.run(
            [sys.executable, "-m", "loopagent", "eval", str(suite), "--base-url", server.url, "--ctx-size", "16384",
             "--out", str(out)], capture_output=True, text=True, timeout=120, env=clean_env(loop_home),
            stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr + done.stdout
    [line] = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert line["status"] == "completed" and "conftest.py" in (out / "runs" / "plant-1" / "diff.patch").read_text()
    assert not canary.exists()  # the planted code ran in the check, and met the wall
    assert line["verified"] is False and "planted" in line["check_output"]  # its error says where it tried
