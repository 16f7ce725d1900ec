"""The read-only-workspace sandbox as an option (plan mode, read-only children, `loop review`): the same
spec with the workspace bound read-only and no extra writable dirs; a plain executor stays plain."""

from __future__ import annotations

import os

from loopagent.sandbox import BwrapExecutor, PlainExecutor, ReadOnlyWhen, read_only, spec_from
from loopagent.sandbox.bwrap import bwrap_argv
from loopagent.sandbox.layout import survey


def test_read_only_binds_the_workspace_read_only_and_drops_writable_dirs(tmp_path):
    extra = tmp_path / "cache"
    extra.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    spec = spec_from("workspace-write", ws, dict(os.environ), writable=[str(extra)])
    normal = BwrapExecutor(spec)
    walled = read_only(normal)
    argv = bwrap_argv(walled.spec, survey(walled.spec), ["true"])
    root = str(ws.resolve())
    assert ["--ro-bind", root, root] == argv[argv.index(root) - 1:argv.index(root) + 1] \
        or f"--ro-bind {root} {root}" in " ".join(argv)
    assert f"--bind {root} {root}" not in " ".join(argv) and str(extra) not in " ".join(argv)
    assert normal.spec.mode == "workspace-write"  # the run's own executor is unchanged
    assert read_only(walled) is walled
    plain = PlainExecutor()
    assert read_only(plain) is plain


def test_read_only_when_follows_its_condition_at_each_call(tmp_path):
    state = {"plan": False}
    executor = ReadOnlyWhen(BwrapExecutor(spec_from("workspace-write", tmp_path, dict(os.environ))),
                            lambda: state["plan"])
    assert "workspace writable" in executor.describe()
    state["plan"] = True
    assert "workspace read-only" in executor.describe()
