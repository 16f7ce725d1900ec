"""What each event says on screen, as styled lines: pure values in, `Line`s out.

A `Line` is a tuple of (text, style) segments; the colour sink styles them, the plain sink joins
the text. Untrusted parts arrive here already escaped (`safe.printable`).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size

from loopagent.counts import counted
from loopagent.render.results import Shown

Line = tuple[tuple[str, str], ...]
WORD_STYLES = {"ok": "green", "error": "red", "denied": "yellow", "cancelled": "yellow"}
SUMMARY_CHARS = 100  # a thinking summary longer than this is cut


def text_of(line: Line) -> str:
    """The line without its styles."""
    return "".join(text for text, _ in line)


def clipped(text: str, width: int) -> str:
    """`text` cut to `width` cells with an ellipsis when longer (tabs as spaces)."""
    text = text.expandtabs(4)
    if width <= 1 or cell_len(text) <= width:
        return text
    return set_cell_size(text, width - 1) + "…"


def call_line(number: int, name: str, subject: str) -> Line:
    """`[N] tool subject`."""
    return ((f"[{number}] ", "dim"), (name, "bold"), (" ", ""), (subject, "cyan"))


def result_lines(shown: Shown, owner: str, took: float | None, width: int) -> list[Line]:
    """The result line (`ok: …`, with the call's time when given), then a command's first output lines."""
    head: Line = (("    ", ""), (owner, "dim"), (f"{shown.word}:", WORD_STYLES[shown.word]), (" ", ""),
                  (shown.rest, ""))
    if took is not None and took >= 1.0 and shown.word != "denied":
        head += ((f" ({took:.1f}s)", "dim"),)
    out = [head]
    out += [(("      ", ""), (clipped(ln, width - 6), "dim")) for ln in shown.head]
    if shown.more:
        out.append((("      ", ""), (f"… +{counted(shown.more, 'line')}", "dim")))
    return out


def notice_line(kind: str, text: str) -> Line:
    """A notice among the answer: `kind: text`."""
    return ((f"{kind}: {text}", "yellow"),)


def diagnostics_line(text: str) -> Line:
    """A line of the language server's block under an edit's diff (loopagent/lsp/)."""
    return (("      ", ""), (text, "red"))


def hook_line(ran) -> Line:
    """One dim line per hook run (a block or a failure in yellow): `hook pre_tool[0] CMD (tool): ok`."""
    from loopagent.render.safe import printable

    about = f" ({ran.tool})" if ran.tool else ""
    said = {"ok": "ok", "block": f"blocked: {ran.reason}", "failed": f"failed: {ran.reason}"}[ran.verdict]
    text = printable(f"hook {ran.kind} {ran.command}{about}: {said}".replace("\n", " "))[:300]
    return ((text, "dim" if ran.verdict == "ok" else "yellow"),)


def compacted_line(before: int, after: int) -> Line:
    """The context was compacted."""
    return ((f"context compacted: {before} -> {after} tokens", "yellow"),)


def thinking_line(text: str) -> Line:
    """One dim line that says what the model thought about."""
    flat = " ".join(text.split())
    short = flat if len(flat) <= SUMMARY_CHARS else flat[:SUMMARY_CHARS - 1] + "…"
    return ((f"thinking: {short}", "dim italic"),)


@dataclass
class Tally:
    """What runs cost: steps (model requests), tokens and checkpoints."""

    steps: int = 0
    prompt: int = 0
    completion: int = 0
    checkpoints: int = 0
    cost: float | None = None  # USD, when the model's price is known

    def figures(self, checkpoints: bool = True, cost: bool = True, tokens: bool = True) -> str:
        """`N steps, P+C tokens, $X, N checkpoints`, without the parts asked away."""
        from loopagent.prices import shown_cost

        parts = [counted(self.steps, "step")]
        if tokens:
            parts.append(f"{self.prompt}+{self.completion} tokens")
        if cost and self.cost is not None:
            parts.append(shown_cost(self.cost))
        if checkpoints:
            parts.append(counted(self.checkpoints, "checkpoint"))
        return ", ".join(parts)


def done_line(status: str, message: str, task: Tally, total: Tally | None, width: int | None = None) -> Line:
    """The closing line of a task. Its figures are the task's; after several tasks (the REPL) the totals
    of all of them follow, each group named. Given a `width`, the line fits it: the least telling parts
    go first (checkpoint counts, the totals, the cost, the tokens); the status and the reason stay."""
    tail = f" ({message})" if message else ""
    shapes = []
    if total is not None:
        shapes += [f"done: {status} · this task: {task.figures()} · all tasks: {total.figures()}{tail}",
                   f"done: {status} · this task: {task.figures(checkpoints=False)} · "
                   f"all tasks: {total.figures(checkpoints=False)}{tail}"]
    else:
        shapes.append(f"done: {status}, {task.figures()}{tail}")
    shapes += [f"done: {status}, {task.figures(checkpoints=False)}{tail}",
               f"done: {status}, {task.figures(checkpoints=False, cost=False)}{tail}",
               f"done: {status}, {task.figures(checkpoints=False, cost=False, tokens=False)}{tail}",
               f"done: {status}{tail}"]
    text = next((shape for shape in shapes if width is None or cell_len(shape) <= width), shapes[-1])
    return ((text, "green" if status == "completed" else "yellow"),)


def todo_rows(todos: tuple[tuple[str, str], ...]) -> list[Line]:
    """The model's checklist under its todo_write call: done items struck and dimmed, the current one bold."""
    from loopagent.details import MARKS
    from loopagent.render.safe import printable

    styles = {"completed": "dim strike", "in_progress": "bold", "pending": ""}
    return [(("      ", ""), (f"{MARKS.get(status, '[ ]')} ", "dim"), (printable(content), styles.get(status, "")))
            for content, status in todos]
