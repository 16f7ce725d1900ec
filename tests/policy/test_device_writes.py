"""Writes to disks whose path is only known at run time, or relative to a cwd in /dev (issue 21 item 7).

With `--sandbox off` the host's disks are reachable, so a raw writer (dd of=, shred, blkdiscard,
wipefs, mkfs*) whose target cannot be shown not to be a device is judged as writing one; inside
the sandbox /dev holds no disk and only a literal device path is denied. Nothing here writes to a
device: the table asks the policy alone, and the one real run aims dd at a canary file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopagent.policy import Policy
from tests.fakeserver import text, tools

ROOT = "/srv/project"
# command, then the verdict with the sandbox off / inside it, in mode all: A allow, Q ask, D deny.
TABLE = [
    ("d=/dev/sda; dd if=/dev/zero of=$d", "DA"),
    ("cd /dev && dd if=/dev/zero of=sda", "DD"),
    ("cd /dev; dd if=/dev/zero of=./sda bs=1M", "DD"),
    ("cd /dev/../dev && dd of=sda", "DD"),
    ("cd / && dd if=/dev/zero of=dev/sda", "DD"),
    ("pushd /dev; dd of=sda", "DD"),
    ("(cd /dev; dd of=sda)", "DD"),
    ('dd if=/dev/zero of="$d"', "DA"),
    ("dd if=/dev/zero of=${DISK:-/dev/sda}", "DA"),
    ("dd if=/dev/zero of=$(ls /dev/sd* | head -1)", "DA"),
    ("dd if=/dev/zero of=/tmp/$x", "DA"),  # x=../dev/sda
    ("cd $DIR && dd if=/dev/zero of=disk", "DA"),  # the directory may be /dev
    ("env -C /dev dd of=sda", "DA"),
    ("shred $d", "DA"),
    ("cd /dev && shred -n 3 -u sda", "DD"),
    ("blkdiscard $d", "DA"),
    ("cd /dev && blkdiscard sda", "DD"),
    ("wipefs -a $d", "DD"),
    ("mkfs.ext4 $d", "DD"),
    ("cd /dev && mkfs.ext4 sda1", "DD"),
    ("cd /dev && cat img > sda", "DD"),
    ("cd /dev && cp img sda", "DD"),
    ("cd /dev && tee sda < img", "DD"),
    ("cd /dev && truncate -s 0 sda", "DD"),
    ("dd if=/dev/zero of=/dev/sda", "DD"),
    # a name in the workspace through which a disk is written later
    ("ln -s /dev/sda disk", "DD"),
    ("ln -sfn ../../dev/sdb1 data", "DD"),  # relative to the link's directory: /dev/sdb1
    ("ln -s $d disk", "QA"),
    ("d=/dev/sda; ln -s $d x; dd of=x", "QA"),
    ("mknod disk b 8 0", "DA"),
    # what stays allowed: files whose place is known, harmless devices, reading in /dev
    ("dd if=/dev/zero of=out.img bs=1M count=1", "AA"),
    ("cd build && dd if=/dev/zero of=disk.img count=1", "AA"),
    ("dd if=/dev/sda of=backup.img count=1", "AA"),
    ("dd if=in.bin of=/dev/null", "AA"),
    ("shred -u secret.txt", "AA"),
    ("cd /dev && ls", "AA"),
    ("ln -s build/app bin/app", "AA"),
    ("ln -sf /dev/null build.log", "AA"),
    ("mknod pipe p", "AA"),
    ("cp build/app $DEST", "AA"),  # not a raw writer: only a literal or resolved /dev path denies
    ("d=build; shred $d/key", "DA"),
]
LETTER = {"A": "allow", "Q": "ask", "D": "deny"}
CASES = [pytest.param(cmd, sandbox, LETTER[v[i]], id=f"{sandbox}-{cmd[:40]!r}")
         for cmd, v in TABLE for i, sandbox in enumerate(("off", "sandboxed"))]


@pytest.mark.parametrize(("command", "sandbox", "expected"), CASES)
def test_device_writes(command, sandbox, expected):
    decision = Policy("all", [], ROOT, sandbox=sandbox).check(command)
    assert decision.verdict == expected, decision
    if expected == "deny":
        assert decision.rule.startswith("built-in:") and decision.reason


@pytest.mark.parametrize("mode", ["ask", "edits"])
def test_a_disk_is_denied_in_every_mode(mode):
    decision = Policy(mode, [], ROOT, sandbox="off").check("d=/dev/sda; dd if=/dev/zero of=$d")
    assert decision.verdict == "deny" and "may be a disk" in decision.reason


def test_unavailable_sandbox_hides_no_disk():
    decision = Policy("all", [], ROOT, sandbox="unavailable").check("cd /dev && dd if=/dev/zero of=sda")
    assert decision.verdict == "deny" and "/dev/sda" in decision.reason


def test_a_link_made_earlier_is_judged_by_where_it_leads(tmp_path):
    """An earlier call left `disk -> /dev/sda` in the workspace; `dd of=disk` looks harmless. Nothing is written:
    the policy only resolves the path (the run's own resolver, as build.py gives it)."""
    from loopagent.tools.workspace import Workspace

    (tmp_path / "disk").symlink_to("/dev/sda")
    (tmp_path / "out").symlink_to(tmp_path / "real.img")
    ws = Workspace(tmp_path)
    for sandbox, verdict in (("off", "deny"), ("sandboxed", "allow")):
        policy = Policy("all", [], ws.root, sandbox=sandbox, resolve=ws.real_rel)
        decision = policy.check("dd if=/dev/zero of=disk bs=1M")
        assert decision.verdict == verdict, (sandbox, decision)
        assert policy.check("shred -n 1 out").verdict == "allow"  # a link that stays inside is a file
    assert "a link out of the workspace" in Policy("all", [], ws.root, resolve=ws.real_rel).check("shred disk").reason


def test_headless_run_denies_dd_to_a_variable(run_loop, server, tmp_path: Path):
    """Through the real entry point: the call is denied and the file it aimed at is untouched."""
    ws = tmp_path / "ws"
    ws.mkdir()
    canary = ws / "canary.img"
    canary.write_text("must survive\n")
    command = "d=canary.img; dd if=/dev/zero of=$d bs=1 count=4 conv=notrunc"
    server.add(tools(("shell", {"command": command})), text("done"))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--no-checkpoints",
                    "--sandbox", "off", "--approval", "all", "wipe it", cwd=ws, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert result["content"].startswith("denied by policy") and "may be a disk" in result["content"], result
    assert canary.read_text() == "must survive\n"
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert any(e["type"] == "tool_result" and e["is_error"] for e in events)
