"""What `loop` says about itself: help once, at 80 columns, with defaults, exit codes and an example;
the version; shell completion. Through the real entry point in a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from loopagent import __version__
from loopagent.cli.app import DEFAULTS
from loopagent.config import Settings
from tests.conftest import clean_env


def loop(*args: str, loop_home, columns: int = 80, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    full = {**clean_env(loop_home), "COLUMNS": str(columns), **(env or {})}
    return subprocess.run([sys.executable, "-m", "loopagent", *args], capture_output=True, text=True,
                          timeout=60, env=full, stdin=subprocess.DEVNULL)


def test_bare_loop_prints_the_help_once(loop_home):
    proc = loop(loop_home=loop_home)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.count("Usage: loop") == 1
    assert "agent" in proc.stdout and "--version" in proc.stdout


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(loop_home, flag):
    proc = loop(flag, loop_home=loop_home)
    assert proc.returncode == 0 and proc.stdout == f"loop {__version__}\n"


def test_agent_help_reads_well_at_80_columns(loop_home):
    proc = loop("agent", "--help", loop_home=loop_home)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert all(len(line) <= 80 for line in out.splitlines()), max(out.splitlines(), key=len)
    assert "…" not in out and "<bool>" not in out and "<str>" not in out and "<list" not in out
    for flag in ("--max-tokens-total TOKENS", "-C, --workspace DIR", "--base-url URL", "--approval MODE",
                 "--checkpoints / --no-checkpoints", "--show-thinking", "--network", "--json"):
        assert flag in out, flag
    flat = " ".join(out.split())  # defaults may wrap
    for name, shown in DEFAULTS.items():
        assert f"[default: {shown}]" in flat, name
    assert "Exit codes:" in out and re.search(r"^\s+2\s+invalid command-line input$", out, re.M)
    assert re.search(r"^\s+130\s+interrupted by Ctrl\+C", out, re.M)
    assert "Examples:" in out and 'loop agent "make the failing test pass"' in out


def test_the_help_defaults_are_the_settings_defaults():
    fields = Settings.model_fields
    for name, shown in DEFAULTS.items():
        assert fields[name].default == shown, name


def test_policy_check_help_names_its_exit_codes(loop_home):
    out = loop("policy", "check", "--help", loop_home=loop_home).stdout
    assert re.search(r"^\s+0\s+allow$", out, re.M) and re.search(r"^\s+3\s+ask", out, re.M)
    assert re.search(r"^\s+4\s+deny$", out, re.M)


def test_completion_script_is_offered(loop_home):
    proc = loop("--show-completion", "bash", loop_home=loop_home,
                env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "_LOOP_COMPLETE" in proc.stdout and "complete" in proc.stdout
    assert "--install-completion" in loop("--help", loop_home=loop_home).stdout


def test_completion_completes_commands_and_flags(loop_home):
    def complete(words: str) -> list[str]:
        env = {"_LOOP_COMPLETE": "complete_bash", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - 1)}
        proc = loop(loop_home=loop_home, env=env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()

    assert complete("loop ag") == ["agent"]
    assert complete("loop agent --max-s") == ["--max-steps"]


def test_completion_offers_approval_modes_formats_and_this_workspace_s_sessions(loop_home, tmp_path, monkeypatch):
    from types import SimpleNamespace

    from loopagent.cli.shell_words import (
        APPROVAL_MODES,
        approval_modes,
        export_formats,
        session_dir,
        session_ids,
    )
    from loopagent.policy import MODES
    from loopagent.session.catalog import sessions_dir

    ws, other = tmp_path / "ws", tmp_path / "other"
    ws.mkdir(), other.mkdir()
    assert [mode for mode, _ in APPROVAL_MODES] == list(MODES)  # the shell's copy cannot drift
    assert session_dir(ws, {"LOOP_HOME": str(loop_home)}) == sessions_dir(loop_home, ws)
    for home_of, stems in ((ws, ("20250101T120000Z-fix-the-test", "20250102T090000Z-add-docs",
                                 "20250101T120500Z-fix-the-test-2")), (other, ("20250103T000000Z-elsewhere",))):
        sessions_dir(loop_home, home_of).mkdir(parents=True)
        for stem in stems:
            (sessions_dir(loop_home, home_of) / f"{stem}.jsonl").write_text("")
    newest_first = ["last", "20250102T090000Z-add-docs", "20250101T120500Z-fix-the-test-2",
                    "20250101T120000Z-fix-the-test"]
    monkeypatch.setenv("LOOP_HOME", str(loop_home))
    monkeypatch.chdir(other)
    assert session_ids(SimpleNamespace(params={"workspace": str(ws)}), "20250101") == newest_first[2:]
    assert session_ids(SimpleNamespace(params={}), "") == ["last", "20250103T000000Z-elsewhere"]
    assert [m for m, _ in approval_modes("E")] == ["edits"] and [f for f, _ in export_formats("h")] == ["html"]

    def complete(words: str, cwd) -> list[str]:  # what a shell gets, through the real entry point
        env = {**clean_env(loop_home), "_LOOP_COMPLETE": "complete_bash", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
        proc = subprocess.run([sys.executable, "-m", "loopagent"], capture_output=True, text=True, timeout=60,
                              env=env, stdin=subprocess.DEVNULL, cwd=cwd)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        return proc.stdout.split()

    assert complete("loop agent --approval ", ws) == ["ask", "edits", "all", "plan"]
    assert complete("loop export ", ws) == newest_first
    assert complete(f"loop agent -C {ws} --fork 2025", other) == newest_first[1:]  # -C names the workspace


def test_help_and_completion_import_no_heavy_module(loop_home):
    # what `loop --help` and a completion request import: typer and our CLI, not the agent behind it
    # (a completion request lets typer parse with pydantic, its own dependency: allowed there only)
    code = ("import sys, runpy; sys.argv = ['loop', '--help']\n"
            "try:\n    runpy.run_module('loopagent', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('rich', 'httpx', 'prompt_toolkit', 'git', 'loopagent.loop', 'loopagent.config', "
            "'loopagent.session') "
            "if m in sys.modules]\nprint('HEAVY', heavy, 'pydantic' in sys.modules)")
    env = {**clean_env(loop_home), "COLUMNS": "80"}
    for extra, marker in (({}, "HEAVY [] False"),
                          ({"_LOOP_COMPLETE": "complete_bash", "COMP_WORDS": "loop ag", "COMP_CWORD": "1"}, "HEAVY []"),
                          ({"_LOOP_COMPLETE": "complete_bash", "COMP_WORDS": "loop export ", "COMP_CWORD": "2"},
                           "HEAVY []")):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                              env={**env, **extra}, stdin=subprocess.DEVNULL, cwd=os.getcwd())
        assert marker in proc.stdout, proc.stdout + proc.stderr
