"""Checkpoints of one workspace over time: take one, list them, undo, redo, rewind, diff.

Commits on the shadow ref are the checkpoints. Their messages carry trailers: the kind
(`tool` before a call; `undo`/`redo`/`rewind` for the state saved before a restore), the
session id and the index of the message the checkpoint precedes. Two small files in the
shadow git directory hold the rest: the undo stack (what `redo` reverses) and a journal
that maps every (session, message index) where a snapshot was taken, or found unchanged,
to the commit holding that state, so a rewind finds it even when no new commit was made.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

from loopagent.checkpoint.lock import LOCK_WAIT, RepoLock
from loopagent.checkpoint.shadow import REF, CheckpointError, ShadowRepo, Staged
from loopagent.session.catalog import workspace_key

FIELDS = ["%H", "%ct", "%s", "%(trailers:key=Loop-Kind,valueonly)", "%(trailers:key=Loop-Session,valueonly)",
          "%(trailers:key=Loop-Message,valueonly)"]


class NothingToDo(CheckpointError):
    """Nothing to undo or redo: not a failure of the workspace, just nothing there."""


class Moved(CheckpointError):
    """The workspace changed between showing what a restore would do and doing it."""


@dataclass(frozen=True)
class Checkpoint:
    commit: str
    time: int
    message: str
    kind: str = "tool"
    session: str = ""
    index: int | None = None
    finished: str = ""  # set when this finished a restore ("undo", "redo", "rewind") that a kill cut off
    kept: str = ""  # the commit that saved the files as they were right before this restore

    @property
    def short(self) -> str:
        return self.commit[:8]


@dataclass(frozen=True)
class Snapshot:
    """What one checkpoint attempt did: `commit` is None when the tree had not changed."""

    commit: str | None
    staged: Staged


def checkpoints_dir(home: Path, workspace: Path) -> Path:
    """The shadow git directory of a workspace."""
    return home / "checkpoints" / workspace_key(workspace)


class Timeline:
    def __init__(self, repo: ShadowRepo, lock_wait: float = LOCK_WAIT):
        self.repo = repo
        self.stack_file = repo.git_dir / "loop-undo.json"
        self.journal_file = repo.git_dir / "loop-journal.jsonl"
        self.restoring_file = repo.git_dir / "loop-restoring.json"  # a restore begun and not yet finished
        self.lock = RepoLock(repo.git_dir, lock_wait)  # one process at a time in the shadow repository

    @classmethod
    def open(cls, home: Path, workspace: Path, max_bytes: int = 5_000_000, lock_wait: float = LOCK_WAIT) -> Timeline:
        """The timeline of a workspace (its shadow repository is created on the first checkpoint)."""
        return cls(ShadowRepo(checkpoints_dir(home, workspace), workspace, max_bytes), lock_wait)

    # ---- taking checkpoints ----------------------------------------------------------------

    def checkpoint(self, label: str, session: str = "", index: int | None = None) -> Snapshot:
        """Snapshot the workspace before a change, unless it equals the newest checkpoint."""
        with self.lock:
            self.repo.init()
            return self.snapshot(label, session, index)

    def snapshot(self, label: str, session: str, index: int | None) -> Snapshot:
        staged = self.repo.stage()
        head = self.repo.head()
        commit = None
        if head is None or self.repo.tree_of(head) != staged.tree:
            commit = self.repo.commit(staged.tree, message(label, "tool", session, index), head)
            self.write_stack([])  # new changes: what was undone can no longer be redone
        self.journal(session, index, commit or head or "", "before", staged.tree, label)
        return Snapshot(commit, staged)

    def after(self, label: str, session: str = "") -> None:
        """Note the workspace as a call left it (a tree, no commit): what differs from it later was not
        made by a call, so an undo shows it as the user's and asks before discarding it (plan.py)."""
        with self.lock:
            if not self.repo.exists:
                return
            tree = self.repo.stage(dirs=False).tree  # never restored: its empty directories do not matter
            self.journal(session, None, "", "after", tree, label)

    def save(self, staged: Staged, label: str, kind: str) -> str:
        """The current state as a commit (a new one only if it differs from the newest)."""
        head = self.repo.head()
        if head is not None and self.repo.tree_of(head) == staged.tree:
            return head
        return self.repo.commit(staged.tree, message(label, kind), head)

    def journal(self, session: str, index: int | None, commit: str, kind: str = "before", tree: str = "",
                label: str = "") -> None:
        """Note which commit holds the files as they were when `session` had `index` messages (kind
        `before` a call), and the trees loop left the workspace in (`after` a call, `restore`, `saved`)."""
        entry = {"session": session, "index": index, "commit": commit, "kind": kind, "tree": tree}
        if label:
            entry["label"] = label
        with self.journal_file.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    # ---- reading -----------------------------------------------------------------------------

    def list(self) -> list[Checkpoint]:
        """Every checkpoint, newest first (including the states saved before undo/redo/rewind)."""
        if not self.repo.exists or self.repo.head() is None:
            return []
        out = self.repo.git("log", "--format=" + "%x1f".join(FIELDS) + "%x1e", REF)
        found = []
        for entry in out.split("\x1e"):
            parts = entry.strip("\n").split("\x1f")
            if len(parts) != len(FIELDS):
                continue
            sha, when, subject, kind, session, index = (p.strip() for p in parts)
            found.append(Checkpoint(sha, int(when), subject, kind or "tool", session,
                                    int(index) if index.isdigit() else None))
        return found

    def diff_since(self, session: str) -> str:
        """Unified diff of the workspace now against its state before the session's first change."""
        start = next((e["commit"] for e in self.entries() if e["session"] == session and e["commit"]), None)
        if start is None:
            return ""
        with self.lock:
            tree = self.repo.stage().tree
        return self.repo.git("diff", "--no-color", "--no-ext-diff", start, tree)

    def first_of(self, session: str) -> str | None:
        """The commit holding the files as they were at `session`'s first checkpoint, or None."""
        return next((e["commit"] for e in self.entries() if e.get("session") == session and e.get("commit")), None)

    def entries(self) -> list[dict]:
        """The journal, oldest first."""
        try:
            lines = self.journal_file.read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a torn journal line loses one rewind point, nothing else
        return out

    # ---- moving back and forth ---------------------------------------------------------------
    # A restore is journalled (`loop-restoring.json`) before it starts and the journal removed when it
    # is done: a restore cut off by a kill is finished by the next undo or redo, never taken for a new
    # starting point (an undo again would otherwise go one checkpoint further back).

    def undo(self, expect: str | None = None) -> Checkpoint:
        """Restore the newest checkpoint that differs from now; repeated, step one further back each time.
        `expect`: the tree the workspace had when the change was shown (plan.py); refused if it moved."""
        if not self.repo.exists:
            raise NothingToDo("no checkpoints for this workspace yet")
        with self.lock:
            self.repo.init()
            finished = self.finish()
            if finished is not None and finished[0] != "redo":
                return finished[1]
            staged = self.current(expect)
            target = self.undo_target(staged)
            return replace(target, kept=self.move_to(target, staged, "undo"))

    def undo_target(self, staged: Staged) -> Checkpoint:
        """What an undo from `staged` restores: the newest state before a call that differs from it, below
        the last restore (named by the call it preceded)."""
        stack, history, entries = self.read_stack(), self.list(), self.entries()
        position = next((i for i, c in enumerate(history) if stack and c.commit == stack[-1]["restored"]), -1)
        # A commit of another kind (the state saved before an undo) is a step too once a call started from it.
        befores = {e.get("commit") for e in entries if e.get("kind", "before") == "before"}
        # Not a step either: the files as loop's last call left them. With the person's edits on top, going
        # back there would take back only those edits; the undo is of the call, and the edits are asked about.
        left = {staged.tree}
        if entries and entries[-1].get("kind") in ("after", "restore"):
            left.add(entries[-1].get("tree"))
        for candidate in history[position + 1:]:
            if (candidate.kind == "tool" or candidate.commit in befores) and \
                    self.repo.tree_of(candidate.commit) not in left:
                return self.named(candidate)
        raise NothingToDo("nothing to undo: the workspace is at its oldest checkpoint" if history
                          else "no checkpoints for this workspace yet")

    def redo(self, expect: str | None = None) -> Checkpoint:
        """Reverse the last undo (or rewind): back to the state saved right before it. What was changed
        since that undo is saved in turn, and the next redo returns to it."""
        if not self.repo.exists:
            raise NothingToDo("nothing to redo")
        with self.lock:
            self.repo.init()
            finished = self.finish()
            if finished is not None and finished[0] == "redo":
                return finished[1]
            stack = self.read_stack()
            if not stack:
                raise NothingToDo("nothing to redo")
            entry = stack[-1]
            staged, kept = self.current(expect), ""
            if staged.tree != self.repo.tree_of(entry["restored"]):
                # Changed since the undo: saved, and put where the next `redo` finds it (before restoring,
                # as an undo does, so that a failure half-way still leaves the way back).
                kept = self.save(staged, "before redo", "redo")
                self.journal("", None, kept, "saved", staged.tree)
                self.write_stack([*stack[:-1], {"saved": kept, "restored": entry["saved"]}])
            self.restoring("redo", entry["saved"], staged.tree)
            if not kept:
                self.write_stack(stack[:-1])
            self.restoring_file.unlink(missing_ok=True)
            self.journal("", None, entry["saved"], "restore", self.repo.tree_of(entry["saved"]))
            return replace(self.found(entry["saved"]), kept=kept)

    def rewind(self, session: str, index: int, expect: str | None = None) -> Checkpoint | None:
        """Restore the files as they were when the session had `index` messages; None if unchanged since."""
        target = self.rewind_target(session, index)
        if target is None:
            return None
        with self.lock:
            self.repo.init()
            self.finish()
            staged = self.current(expect)
            if self.repo.tree_of(target.commit) != staged.tree:
                return replace(target, kept=self.move_to(target, staged, "rewind"))
        return target

    def rewind_target(self, session: str, index: int) -> Checkpoint | None:
        """The checkpoint holding the files as they were when `session` had `index` messages."""
        entry = next((e for e in self.entries() if e.get("session") == session and e.get("index") is not None
                      and e["index"] >= index and e.get("commit")), None)
        if entry is None:
            return None
        target = next((c for c in self.list() if c.commit == entry["commit"]), None)
        if target is None:
            raise CheckpointError(f"checkpoint {entry['commit'][:8]} is missing from the shadow repository")
        return target

    def current(self, expect: str | None) -> Staged:
        """The workspace staged now; refused when it is no longer what the person was shown."""
        staged = self.repo.stage()
        if expect is not None and staged.tree != expect:
            raise Moved("the files changed after the list was shown; nothing was restored: run it again")
        return staged

    def named(self, c: Checkpoint) -> Checkpoint:
        """`c` named by the last call it was taken before: an unchanged snapshot makes no commit, so the
        commit's own subject may name an earlier call (a read-only MCP call, say) that changed nothing."""
        entry = next((e for e in reversed(self.entries()) if e.get("commit") == c.commit
                      and e.get("kind", "before") == "before" and e.get("label")), None)
        if entry is None:
            return c
        index = entry.get("index")
        return replace(c, message=entry["label"], session=str(entry.get("session") or ""),
                       index=index if isinstance(index, int) else None)

    def move_to(self, target: Checkpoint, staged: Staged, kind: str) -> str:
        """Save the current state (so redo can return to it), then restore `target`; returns the saved commit."""
        saved = self.save(staged, f"before {kind} to {target.short} {target.message}", kind)
        self.journal("", None, saved, "saved", staged.tree)
        # Pushed before restoring: if the restore fails half-way, `redo` still returns to the saved state.
        self.write_stack([*self.read_stack(), {"saved": saved, "restored": target.commit}])
        try:
            self.restoring(kind, target.commit, staged.tree)
        except CheckpointError as exc:
            raise CheckpointError(f"{exc}; the state before the {kind} is saved as {saved[:8]}: "
                                  "`loop redo` returns to it") from None
        self.restoring_file.unlink(missing_ok=True)
        self.journal("", None, target.commit, "restore", self.repo.tree_of(target.commit))
        return saved

    def restoring(self, kind: str, target: str, current: str) -> None:
        """Journal the restore, then do it. A failure it reports removes the journal (the message says what
        to do); only a kill leaves it, for `finish`. The caller removes it once its own bookkeeping is done."""
        tmp = self.restoring_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"kind": kind, "target": target}), encoding="utf-8")
        os.replace(tmp, self.restoring_file)
        try:
            self.repo.restore(target, current)
        except CheckpointError:
            self.restoring_file.unlink(missing_ok=True)
            raise

    def pending(self) -> tuple[str, str] | None:
        """(kind, target commit) of a restore a kill cut off, or None (an unreadable note is dropped)."""
        try:
            entry = json.loads(self.restoring_file.read_text(encoding="utf-8"))
            return str(entry["kind"]), str(entry["target"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            self.restoring_file.unlink(missing_ok=True)
            return None

    def finish(self) -> tuple[str, Checkpoint] | None:
        """Complete a restore that a kill cut off: (its kind, its target), or None when there is none."""
        if (pending := self.pending()) is None:
            return None
        kind, target = pending
        self.restoring(kind, target, self.repo.stage().tree)
        stack = self.read_stack()
        if kind == "redo" and stack and stack[-1]["saved"] == target:  # killed before the stack was popped
            self.write_stack(stack[:-1])
        self.restoring_file.unlink(missing_ok=True)
        self.journal("", None, target, "restore", self.repo.tree_of(target))
        return kind, replace(self.found(target), finished=kind)

    def found(self, commit: str) -> Checkpoint:
        return next((c for c in self.list() if c.commit == commit), Checkpoint(commit, 0, ""))

    def read_stack(self) -> list[dict]:
        try:
            stack = json.loads(self.stack_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return stack if isinstance(stack, list) else []

    def write_stack(self, stack: list[dict]) -> None:
        if not stack and not self.stack_file.exists():
            return
        tmp = self.stack_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(stack), encoding="utf-8")
        os.replace(tmp, self.stack_file)


def message(label: str, kind: str, session: str = "", index: int | None = None) -> str:
    """Commit message: a one-line subject, then trailers that tools and `loop checkpoints` read."""
    subject = " ".join(label.split())
    subject = subject if len(subject) <= 100 else subject[:99] + "…"
    trailers = [f"Loop-Kind: {kind}"]
    if session:
        trailers.append(f"Loop-Session: {session}")
    if index is not None:
        trailers.append(f"Loop-Message: {index}")
    return f"{subject}\n\n" + "\n".join(trailers) + "\n"
