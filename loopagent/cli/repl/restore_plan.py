"""What a restore will do and did, in words: shared by the REPL's /undo, /redo and /rewind (restore.py here)
and `loop undo`/`loop redo` (cli/state_cmd.py, which reaches down into the REPL's package for it; importing
the package costs nothing). Presentation of checkpoint/plan.py's plan, so it stays beside the commands that
print it rather than in checkpoint/, which says nothing to a person."""

from __future__ import annotations

from typing import Any

YOURS = "yours: made by no call of loop's (you, /init, /export, !cmd); saved first: redo brings them back"
NOT_DONE = {"undo": "undone", "redo": "redone", "rewind": "restored"}
QUESTION = {"undo": "undo these changes?", "redo": "redo these changes?", "rewind": "restore these files?"}


def asks(plan: Any) -> bool:
    """Whether a restore asks first: when it would discard changes no call made. The changes of calls
    alone are listed and done without a question (a script's `loop undo` after a run), since redo
    brings them back just the same."""
    return bool(plan.yours)


def plan_lines(plan: Any) -> list[str]:
    """What a restore will change (checkpoint/plan.py): a header, one line per file, the user's marked."""
    c = plan.target
    head = f"{plan.kind}: the files go back to {c.short} ({c.message}):"
    width = max((len(x.path) for x in plan.changes), default=0)
    rows = [f"  {x.action:<6}  {x.path:<{width}}  {counts(x):<9}{'  yours' if x.yours else ''}".rstrip()
            for x in plan.changes]
    return [head, *rows, *([YOURS] if plan.yours else [])]


def counts(change: Any) -> str:
    """`+3 -1`; a deleted file shows only its lines going, a created one only its lines coming."""
    if change.added is None:
        return "binary"
    if change.action == "delete":
        return f"-{change.removed}"
    if change.action == "create":
        return f"+{change.added}"
    return f"+{change.added} -{change.removed}"


def done_line(kind: str, c: Any, plan: Any, redo: str) -> str:
    """The line after a restore: where the files are now, how to go back (`redo`: the command that does),
    and where the person's own changes it replaced were saved."""
    head = f"finished the interrupted {c.finished}" if c.finished else {"undo": "undone", "redo": "redone"}.get(kind)
    if head is None:
        text = f"files restored to {c.short} ({c.message})"
    elif kind == "redo" and not c.finished:
        text = f"{head}: the files are back to {c.short} ({c.message})"
    else:
        text = f"{head}: the files are as they were at {c.short} ({c.message})"
    if plan is not None and plan.yours and c.kept:
        text += f"; your changes are saved in checkpoint {c.kept[:8]}"
    return text + (f"; {redo} reverses this" if redo and (kind != "redo" or c.finished == "undo" or c.kept) else "")


def apply(timeline: Any, plan: Any, session: str = "", index: int = 0) -> Any:
    """Do what `plan` showed, if the files are still as they were then. A restore a kill cut off is only
    finished: what was asked for now is shown (and asked about) when asked again."""
    if plan.finishing:
        return (timeline.redo if plan.kind == "redo" else timeline.undo)()
    if plan.kind == "rewind":
        return timeline.rewind(session, index, plan.tree)
    return (timeline.redo if plan.kind == "redo" else timeline.undo)(plan.tree)
