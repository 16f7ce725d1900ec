"""Putting a checkpoint back: the workspace made to match a commit, and nothing else touched.

Files added since are deleted and changed or deleted files are written back, keeping each file's
permissions (git knows only 644 and 755). Never touched: files the snapshots never held (too big,
nested repositories), paths the target's own `.gitignore` rules ignore (an agent that edited
`.gitignore` made them visible; the user's ignored files were never in a checkpoint), and
directories that were there, empty, when the target was taken.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

from loopagent.checkpoint.shadow import CheckpointError, ShadowRepo, nul_join

RULES = ".gitignore"
GATE = "LOOP_TEST_RESTORE_GATE"  # test-only: see `gate`


def restore(repo: ShadowRepo, target: str, current: str) -> None:
    """Make the workspace match commit `target`, given that it now matches tree `current`; checked after."""
    target_tree = repo.tree_of(target)
    keep = repo.left_out(target_tree)
    out = repo.git("diff-tree", "-r", "-z", "--no-renames", "--name-status", current, target_tree, strip=False)
    fields = [f for f in out.split("\0") if f]
    changes = list(zip(fields[::2], fields[1::2], strict=False))
    removed = [p for status, p in changes if status == "D" and p not in keep]
    write = [p for status, p in changes if status != "D"]
    modes = modes_of(repo.work_tree, write)
    remember_modes(repo, current, modes_of(repo.work_tree, removed))  # for a redo that brings them back
    dirs = repo.empty_dirs(target_tree)
    # The target's ignore rules first: they decide which of the other paths are the user's to keep.
    for p in removed:
        if is_rules(p):
            delete(repo, p, dirs)
    checkout(repo, target, [p for p in write if is_rules(p)])
    ignored = ignored_paths(repo, [p for p in removed if not is_rules(p)])
    if ignored:  # no longer part of the snapshots; left on disk as they are
        repo.git("update-index", "--force-remove", "-z", "--stdin", stdin=nul_join(sorted(ignored)))
    gate()
    for p in removed:
        if not is_rules(p) and p not in ignored:
            delete(repo, p, dirs)
    checkout(repo, target, [p for p in write if not is_rules(p)])
    keep_modes(repo.work_tree, modes)
    recalled = recall_modes(repo, target_tree)
    keep_modes(repo.work_tree, {p: recalled[p] for p in write if p not in modes and p in recalled}, exact=True)
    for d in dirs:
        if repo.plain_dir(os.path.dirname(d), {}):
            os.makedirs(repo.work_tree / d, exist_ok=True)
    after = repo.stage().tree
    out = repo.git("diff-tree", "-r", "-z", "--name-only", after, target_tree, strip=False)
    differ = [p for p in out.split("\0") if p and p not in keep and p not in ignored]
    if differ:
        raise CheckpointError(f"the restore is incomplete; these paths still differ: {', '.join(differ[:5])}")


def is_rules(path: str) -> bool:
    return os.path.basename(path) == RULES


def checkout(repo: ShadowRepo, target: str, paths: list[str]) -> None:
    if paths:
        repo.git("checkout", target, "--pathspec-from-file=-", "--pathspec-file-nul", stdin=nul_join(paths))


def ignored_paths(repo: ShadowRepo, paths: list[str]) -> set[str]:
    """Which of `paths` the ignore rules now on disk (the target's) ignore, whatever the index holds."""
    if not paths:
        return set()
    out = repo.git("check-ignore", "--no-index", "-z", "--stdin", stdin=nul_join(paths), strip=False, ok=1,
                   literal=False)  # check-ignore takes paths, not pathspecs, and refuses the literal magic
    return {p for p in out.split("\0") if p}


def modes_of(root: Path, paths: list[str]) -> dict[str, int]:
    """The permission bits of the regular files among `paths` that exist now."""
    out = {}
    for p in paths:
        try:
            st = os.lstat(root / p)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out[p] = stat.S_IMODE(st.st_mode)
    return out


def remember_modes(repo: ShadowRepo, tree: str, modes: dict[str, int]) -> None:
    """Note the permissions of files a restore deletes, beside the tree they belong to: git keeps only
    644 or 755, and a private 600 file brought back by redo must not come back readable by all."""
    if not modes:
        return
    path = repo.side_file("loop-modes", tree)
    try:
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps({**recall_modes(repo, tree), **modes}), encoding="utf-8")
    except OSError as exc:
        raise CheckpointError(f"cannot write {path}: {exc.strerror or exc}") from None


def recall_modes(repo: ShadowRepo, tree: str) -> dict[str, int]:
    try:
        found = json.loads(repo.side_file("loop-modes", tree).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {p: m for p, m in found.items() if isinstance(m, int)} if isinstance(found, dict) else {}


def keep_modes(root: Path, modes: dict[str, int], exact: bool = False) -> None:
    """Give rewritten files their permissions back; only the executable bits follow the checkpoint
    (`exact`: the modes were noted beside this very tree, so they are right as they are)."""
    for p, old in modes.items():
        full = root / p
        try:
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode):
                continue
            want = old if exact else old & ~0o111 | ((old & 0o444) >> 2 if st.st_mode & 0o100 else 0)
            if stat.S_IMODE(st.st_mode) != want:
                os.chmod(full, want)
        except OSError as exc:
            raise CheckpointError(f"cannot restore the permissions of {p}: {exc.strerror or exc}") from None


def delete(repo: ShadowRepo, path: str, dirs: set[str]) -> None:
    """Remove a file the checkpoint does not have, then its directories that became empty (unless the
    checkpoint had them, empty)."""
    root = repo.work_tree
    parts = Path(path).parts
    if ".git" in parts or ".." in parts or Path(path).is_absolute():
        raise CheckpointError(f"refusing to delete {path!r}")
    full = root / path
    real_parent = os.path.realpath(full.parent)
    if real_parent != str(root) and not real_parent.startswith(str(root) + os.sep):
        raise CheckpointError(f"refusing to delete {path!r}: its directory leads outside the workspace")
    try:
        full.unlink(missing_ok=True)
    except OSError as exc:
        raise CheckpointError(f"cannot delete {path}: {exc.strerror or exc}") from None
    parent = full.parent
    while parent != root and parent.is_dir() and str(parent.relative_to(root)) not in dirs \
            and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


def gate() -> None:
    """Test-only fault point, inert unless $LOOP_TEST_RESTORE_GATE names a file: a restore half-way
    writes its pid there and waits to be killed (tests/checkpoint/test_undo_faults.py kills it with SIGKILL)."""
    path = os.environ.get(GATE)
    if not path:
        return
    Path(path).write_text(str(os.getpid()), encoding="ascii")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.05)
