"""What an undo, redo or rewind would change, worked out before it runs, and which of it is the user's.

The journal (timeline.py) holds every tree loop itself left the workspace in: after each call
(`after`), after each restore (`restore`), the state saved before one (`saved`), and the state each
call started from (`before`). What differs from the last of them was made by no call: the person's
own edits and new files, or files loop wrote outside a call (/init, /export). So is a change that
shows up between one call's end and the next call's start (a gap) since the restored state. A
restore that would discard any of those is asked about first; every restore saves the state it
leaves, so `loop redo` brings it back.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopagent.checkpoint.timeline import Checkpoint, NothingToDo, Timeline

GAPS = 200  # the newest gaps looked at; older ones are far behind any restore a person asks for
SETTLED = ("after", "restore")  # trees loop left; a `before` entry after one of them that differs shows a gap


@dataclass(frozen=True)
class Change:
    """One file the restore would change: `delete`, `create` (it comes back) or `change`, with the lines
    it adds and removes (None for a binary file), and whether the current content is the user's work."""

    path: str
    action: str
    added: int | None
    removed: int | None
    yours: bool


@dataclass(frozen=True)
class Plan:
    kind: str  # undo, redo, rewind
    target: Checkpoint
    tree: str  # the workspace as it was shown; the restore is refused if it has moved since
    changes: tuple[Change, ...] = ()
    finishing: bool = False  # a restore a kill cut off is finished first, as it was asked for

    @property
    def yours(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.yours)


def preview(timeline: Timeline, kind: str, session: str = "", index: int = 0) -> Plan | None:
    """What `kind` would do now (NothingToDo as the restore itself would say it); None for a rewind to a
    message with no checkpoint after it."""
    repo = timeline.repo
    if not repo.exists:
        raise NothingToDo("nothing to redo" if kind == "redo" else "no checkpoints for this workspace yet")
    with timeline.lock:
        repo.init()
        if pending := timeline.pending():
            return Plan(pending[0], timeline.found(pending[1]), "", finishing=True)
        staged = repo.stage()
        if kind == "undo":
            target = timeline.undo_target(staged)
        elif kind == "redo":
            stack = timeline.read_stack()
            if not stack:
                raise NothingToDo("nothing to redo")
            target = timeline.found(stack[-1]["saved"])
        else:
            found = timeline.rewind_target(session, index)
            if found is None:
                return None
            target = found
        target_tree = repo.tree_of(target.commit)
        if target_tree == staged.tree:
            return Plan(kind, target, staged.tree)
        mine = yours(timeline, staged.tree, target_tree)
        return Plan(kind, target, staged.tree, changes(timeline, staged.tree, target_tree, mine))


def changes(timeline: Timeline, current: str, target: str, mine: set[str]) -> tuple[Change, ...]:
    """The files that differ between the trees, as the restore from `current` to `target` changes them."""
    repo = timeline.repo
    keep = repo.left_out(target)  # too big for the target's snapshot: a restore leaves them alone
    status = repo.git("diff-tree", "-r", "-z", "--no-renames", "--name-status", current, target, strip=False)
    fields = [f for f in status.split("\0") if f]
    actions = {path: code for code, path in zip(fields[::2], fields[1::2], strict=False)}
    counts = repo.git("diff-tree", "-r", "-z", "--no-renames", "--numstat", current, target, strip=False)
    found = []
    for item in counts.split("\0"):
        if item.count("\t") < 2:
            continue
        added, removed, path = item.split("\t", 2)
        code = actions.get(path, "M")
        if code == "D" and path in keep:
            continue
        action = {"D": "delete", "A": "create"}.get(code, "change")
        found.append(Change(path, action, int(added) if added.isdigit() else None,
                            int(removed) if removed.isdigit() else None, path in mine))
    return tuple(sorted(found, key=lambda c: (not c.yours, c.path)))


def yours(timeline: Timeline, current: str, target: str) -> set[str]:
    """Paths changed by no call: since the last tree loop left, and in the gaps since `target` was recorded."""
    entries = [e for e in timeline.entries() if e.get("tree")]
    repo = timeline.repo
    last = entries[-1]["tree"] if entries else (repo.tree_of(head) if (head := repo.head()) else "")
    pairs = [(last, current)] if last and last != current else []
    start = max((i for i, e in enumerate(entries) if e["tree"] == target), default=0)
    tail = entries[start:]
    pairs += [(a["tree"], b["tree"]) for a, b in zip(tail, tail[1:], strict=False)
              if a.get("kind") in SETTLED and b.get("kind") == "before" and a["tree"] != b["tree"]][-GAPS:]
    if not pairs:
        return set()
    # One git for all pairs: each pair's output starts with a "<tree> <tree>" line, the names follow.
    out = repo.git("diff-tree", "--stdin", "-r", "-z", "--name-only", "--no-renames", strip=False,
                   stdin="".join(f"{a} {b}\n" for a, b in pairs).encode())
    for a, b in pairs:
        out = out.replace(f"{a} {b}\n", "\0")
    return {p for p in out.split("\0") if p}
