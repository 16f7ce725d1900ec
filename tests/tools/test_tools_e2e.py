"""The workspace tools through the real CLI and the fake server: what the model gets back, what is on disk."""

from __future__ import annotations

import json
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from loopagent.tools.search import find_rg
from tests.conftest import clean_env
from tests.fakeserver import text, tools


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def nested_venv(where: Path) -> Path:
    """A venv whose `bin/` is ours to fill, seeing the running interpreter's packages (not its base's).

    `--system-site-packages` would expose the *base* interpreter's site-packages, which on a fresh
    machine hold none of our dependencies; a `.pth` file that adds the running interpreter's own
    site directories (their `.pth` files included, so the editable install works) does not.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=60)
    paths = sysconfig.get_paths()
    ours = dict.fromkeys([*site.getsitepackages(), paths["purelib"], paths["platlib"]])
    probe = subprocess.run(
        [str(where / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60)
    line = "import site; " + "; ".join(f"site.addsitedir({d!r})" for d in ours) + "\n"
    (Path(probe.stdout.strip()) / "loop-test-parent.pth").write_text(line)
    return where


def agent(run_loop, server, ws: Path, *extra: str):
    return run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--approval", "all",
                    *extra, "do the task")


def test_escapes_get_error_results_and_leave_outside_files_untouched(run_loop, server, sample, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("do not touch\n")
    (sample / "etc").symlink_to("/etc")
    server.add(
        tools(("write_file", {"path": "../outside.txt", "content": "pwned\n"}),
              ("read_file", {"path": "../../etc/passwd"}),
              ("read_file", {"path": "/etc/passwd"}),
              ("read_file", {"path": "etc/passwd"}),
              ("edit_file", {"path": str(outside), "old_string": "do not", "new_string": "did"}),
              ("list_files", {"path": "etc"})),
        text("I could not get out."),
    )
    proc = agent(run_loop, server, sample)
    assert proc.returncode == 0, proc.stderr
    assert outside.read_text() == "do not touch\n"
    results = [e for e in events(proc.stdout) if e["type"] == "tool_result"]
    assert len(results) == 6 and all(r["is_error"] for r in results)
    sent = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in sent] == [r["id"] for r in results]
    for m in sent:
        assert "is outside the workspace" in m["content"] and "root:" not in m["content"]


def test_file_tools_round_trip_through_the_cli(run_loop, server, sample):
    server.add(
        tools(("list_files", {"pattern": "*.py"}), ("grep", {"pattern": "def python_sources"})),
        tools(("write_file", {"path": "notes/todo.md", "content": "- one\n"}),
              ("edit_file", {"path": "notes/todo.md", "old_string": "- one", "new_string": "- two"}),
              ("edit_file", {"path": "path_rules.py", "old_string": "x", "new_string": "y"})),
        text("done"),
    )
    proc = agent(run_loop, server, sample)
    assert proc.returncode == 0, proc.stderr
    first = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert "path_rules.py" in first[0].splitlines()
    assert first[1].startswith("path_rules.py:") and ":def python_sources(" in first[1]
    second = [m["content"] for m in server.requests[2]["messages"] if m["role"] == "tool"][2:]
    assert second[0] == "created notes/todo.md: new file, 1 line"
    assert second[1].startswith("edited notes/todo.md: replaced 1 occurrence at line 1")
    assert "has not been read in this session" in second[2]  # unread file: refused
    assert (sample / "notes/todo.md").read_text() == "- two\n"


@pytest.mark.skipif(find_rg() is None, reason="rg not installed")
def test_read_only_calls_of_a_turn_run_concurrently_and_answer_in_order(server, sample, tmp_path, loop_home):
    """Two greps meet at a rendezvous inside a stand-in `rg`: only concurrent calls can both get through."""
    venv = nested_venv(tmp_path / "venv")
    meet = tmp_path / "meet"
    meet.mkdir()
    fake = venv / "bin" / "rg"
    fake.write_text(
        "#!/bin/bash\n"
        'touch "$RG_RENDEZVOUS/$$"\n'
        "for _ in $(seq 1 1000); do\n"
        '  if [ "$(ls "$RG_RENDEZVOUS" | wc -l)" -ge 2 ]; then exec ' + find_rg() + ' "$@"; fi\n'
        "  sleep 0.01\n"
        "done\n"
        "echo 'no concurrent partner within 10 s' >&2; exit 2\n"
    )
    fake.chmod(0o755)
    server.add(
        tools(("grep", {"pattern": "def python_sources"}),
              ("read_file", {"path": "path_rules.py", "limit": 1}),
              ("grep", {"pattern": "import", "path": "tests"}),
              ("read_file", {"path": "missing.py"})),
        text("done"),
    )
    env = {**clean_env(loop_home), "RG_RENDEZVOUS": str(meet)}
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "loopagent", "agent", "-C", str(sample), "--base-url", server.url,
         "--json", "search"], capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert len(list(meet.iterdir())) == 2  # both greps went through the stand-in
    sent = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in sent] == ["call_0_grep", "call_1_read_file", "call_2_grep",
                                                  "call_3_read_file"]
    assert ":def python_sources(" in sent[0]["content"]
    assert sent[1]["content"].startswith("     1\t")
    assert sent[2]["content"] == "tests/test_path_rules.py:1:from path_rules import python_sources"
    assert "missing.py does not exist" in sent[3]["content"]
