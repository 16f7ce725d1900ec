"""Every parser and policy attack of issue 10, through the real `loop policy check` (exit 0 allow, 3 ask, 4 deny).

The rules live in the user file, as a user would write them; nothing here runs the commands.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

ALLOW, ASK, DENY = 0, 3, 4
RULES = {"allow": ["cat *", "git status*", "echo *"], "deny": ["git push*", "make deploy*"]}

# command, mode, expected exit code
ATTACKS = [
    # a substitution hidden inside a ~word
    ("cat timeparse.py ~$(touch pwned.txt)", "edits", ASK),
    ("cat timeparse.py ~$(touch pwned.txt)", "all", ASK),
    ("true ~$(rm -rf ..)", "all", DENY),
    ("true ~$(sudo id)", "all", DENY),
    ("cat x ~`touch pwned.txt`", "edits", ASK),
    ("echo ${x:-$(touch pwned.txt)}", "edits", ASK),
    # quoting that hides a substitution from a naive reader
    ("cat \"$(echo \"'\")\" ~$(touch pwned.txt) \"'\"", "edits", ASK),
    ("ls # don't\ncat x ~$(touch pwned.txt) #'", "edits", ASK),
    # a wrapper's own assignments and options
    ("BASH_ENV=evil.sh bash -c 'cat x'", "edits", ASK),
    ("bash --rcfile evil.sh -i -c 'cat x'", "edits", ASK),
    ("bash -l -c 'cat x'", "edits", ASK),
    ("GIT_CONFIG_PARAMETERS=\"'core.fsmonitor'='touch pwned.txt'\" bash -c 'git status'", "edits", ASK),
    ("GIT_CONFIG_PARAMETERS=\"'core.fsmonitor'='touch pwned.txt'\" git status", "edits", ASK),
    ("env LD_PRELOAD=./evil.so cat x", "edits", ASK),
    ("export BASH_ENV=evil.sh; bash -c 'cat x'", "edits", ASK),
    ("PATH=.:$PATH cat x", "edits", ASK),
    ("BASH_ENV=evil.sh bash -c 'cat x'", "all", ASK),  # unknown code: mode all allows it only sandboxed
    # the workspace's parent deleted in mode all
    ('p=..; rm -rf "$p"', "all", ASK),
    ('rm -rf "${PWD%/*}"', "all", ASK),
    ("echo .. | xargs rm -rf", "all", ASK),
    ("find .. -exec rm -rf {} +", "all", ASK),
    ("{rm,-rf,..}", "all", DENY),
    ('f(){ rm -rf "$1"; }; f ..', "all", ASK),
    ("git -c alias.x='!rm -rf ..' x", "all", DENY),
    ("python3 -c 'import shutil; shutil.rmtree(\"..\")'", "all", ASK),
    ("perl -e 'system(\"rm -rf ..\")'", "all", ASK),
    ("node -e 'require(\"fs\").rmSync(\"..\", {recursive: true})'", "all", ASK),
    ("bash <<EOF\nrm -rf ..\nEOF", "all", DENY),
    ("bash <<'EOF'\nrm -rf ..\nEOF", "all", DENY),
    ("bash <<< 'rm -rf ..'", "all", DENY),
    ("python3 - <<'EOF'\nimport shutil; shutil.rmtree('..')\nEOF", "all", ASK),
    ("bash < script.sh", "all", ASK),
    ("alias ls='rm -rf ..'", "all", DENY),
    ("trap 'touch pwned.txt' EXIT", "all", ASK),
    ("eval \"$(echo touch pwned.txt)\"", "all", ASK),
    ("CDPATH=.. cd x && rm -rf *", "all", ASK),
    ("find .. -delete", "all", ASK),
    # force pushes without a force flag
    ("git -c alias.p='push --force' p", "all", DENY),
    ("git -c remote.origin.push=+HEAD:main push origin", "all", DENY),
    ("git push origin +HEAD:main", "all", DENY),
    ("GIT_CONFIG_PARAMETERS=\"'alias.p'='push --force'\" git p", "all", DENY),
    # user deny rules sidestepped by global options
    ("git -C . push", "all", DENY),
    ("git --no-pager -c color.ui=never push origin main", "all", DENY),
    ("make -s deploy", "all", DENY),
    ("make -j4 -C . -f Makefile deploy", "all", DENY),
    # edits that execute later
    ("echo '[core] fsmonitor = touch pwned.txt' >> .git/config", "all", ASK),
    ("git config core.fsmonitor 'touch pwned.txt'", "all", ASK),
    ("cp evil.sh .git/hooks/pre-commit", "all", ASK),
    ("echo x | tee .loop/config.json", "all", ASK),
    # descriptor forms that crashed the parser
    ("exec >&- 2>&-", "edits", ASK),
    ("cat x 2>&-", "edits", ALLOW),
    ("cat x 2>&1-", "edits", ALLOW),
    ("exec {fd}>out.txt", "all", ALLOW),
]


@pytest.fixture
def workspace(tmp_path: Path, loop_home: Path) -> Path:
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps(RULES, indent=2) + "\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.mark.parametrize(("command", "mode", "code"), ATTACKS, ids=[f"{m}-{c[:40]!r}" for c, m, _ in ATTACKS])
def test_attack_is_stopped(run_loop, workspace, command, mode, code):
    # --sandbox off: the parser alone must hold, as on a machine without bubblewrap
    proc = run_loop("policy", "check", command, "-C", str(workspace), "--approval", mode, "--sandbox", "off",
                    timeout=30)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == {ALLOW: "allow", ASK: "ask", DENY: "deny"}[code]
    assert not (workspace / "pwned.txt").exists()


def test_allowed_forms_still_pass(run_loop, workspace):
    for command in ("cat README.md", "git -C . status", "git -c color.ui=never status", "echo ok > out.txt"):
        proc = run_loop("policy", "check", command, "-C", str(workspace), timeout=30)
        assert proc.returncode == ALLOW, (command, proc.stdout)


def test_unreadable_command_names_the_reason(run_loop, workspace):
    proc = run_loop("policy", "check", "cat x ~$(touch pwned.txt)", "-C", str(workspace), timeout=30)
    assert proc.returncode == ASK
    assert "~word" in proc.stdout and "built-in: unreadable command" in proc.stdout


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_inline_code_runs_unasked_in_mode_all_only_inside_the_sandbox(run_loop, workspace):
    command = "python3 -c 'import shutil; shutil.rmtree(\"..\")'"
    inside = run_loop("policy", "check", command, "-C", str(workspace), "--approval", "all", timeout=30)
    outside = run_loop("policy", "check", command, "-C", str(workspace), "--approval", "all",
                       "--sandbox", "off", timeout=30)
    if "sandbox: sandboxed" not in inside.stdout:
        pytest.skip(f"bwrap does not work here: {inside.stdout}")
    assert (inside.returncode, outside.returncode) == (ALLOW, ASK), inside.stdout + outside.stdout
    assert "sandbox: not sandboxed (sandbox off)" in outside.stdout
