"""`loop eval` against a hostile workspace: the model's files are never imported by loop, nothing of a killed
eval runs on or stays on disk, and a huge sparse file does not take the diff's memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import clean_env, where_shells_run
from tests.fakeserver import FakeServer, Reply, text, tools


def plant(marker: Path) -> list[Reply]:
    """The model writes a `bashlex.py` into the workspace, then calls shell: loop parses the command with bashlex."""
    planted = f"open({str(marker)!r}, 'w').write('imported by loop')\n"
    return [tools(("write_file", {"path": "bashlex.py", "content": planted})),
            tools(("shell", {"command": "echo hi"})), text("done")]


def test_a_model_written_module_in_the_copy_is_not_imported_by_the_agent(tmp_path: Path, loop_home: Path):
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    ws.mkdir()
    # the attack, on a plain `python -m loopagent` started in the workspace: loop imports the planted module
    with FakeServer(plant(marker)) as server:
        subprocess.run([sys.executable, "-m", "loopagent", "agent", "--json", "-C", str(ws), "--base-url", server.url,
                        "--approval", "all", *where_shells_run(), "plant"], cwd=ws, capture_output=True, text=True,
                       timeout=60, env=clean_env(loop_home), stdin=subprocess.DEVNULL)
    assert marker.read_text() == "imported by loop"
    marker.unlink()
    # the same through `loop eval`, whose runs start in their copy: the module stays the model's file
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.txt").write_text("a\n")
    suite, out = tmp_path / "suite.toml", tmp_path / "out"
    suite.write_text('[[task]]\nid = "plant"\nprompt = "plant"\nrepo = "repo"\ncheck = "true"\n')
    with FakeServer(plant(marker)) as server:
        done = subprocess.run([sys.executable, "-m", "loopagent", "eval", str(suite), "--base-url", server.url,
                               *where_shells_run(), "--out", str(out)], capture_output=True, text=True, timeout=120,
                              env=clean_env(loop_home), stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr + done.stdout
    [line] = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert line["status"] == "completed" and line["steps"] == 3  # the shell call ran, parsed by the real bashlex
    assert "bashlex.py" in (out / "runs" / "plant-1" / "diff.patch").read_text()
    assert not marker.exists()
