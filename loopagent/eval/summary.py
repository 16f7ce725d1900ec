"""What an eval found: counts over its results lines, as a Rich table and as report.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

LIMITS = {"step_limit", "token_limit", "time_limit", "loop_detected"}
REPORT = "report.md"


@dataclass(frozen=True)
class Summary:
    tasks: int
    runs: int
    completed: int
    verified: int
    claimed: int  # completed, but the check failed: the agent said it was done and was not
    limits: int
    errors: int
    tokens: int
    cost: float | None
    wall_s: float
    repeat: int
    pass_at_k: float  # share of tasks verified in at least one of their attempts
    pass_at_1: float  # share of runs verified


def summarise(lines: list[dict], wall_s: float, repeat: int) -> Summary:
    """The counts over `lines`; cost only when some run's price was known."""
    ids = {line["id"] for line in lines}
    solved = {line["id"] for line in lines if line.get("verified")}
    costs = [line["cost_usd"] for line in lines if isinstance(line.get("cost_usd"), (int, float))]
    status = [line.get("status") for line in lines]
    usage = [line.get("usage") or {} for line in lines]
    return Summary(
        tasks=len(ids), runs=len(lines), completed=status.count("completed"),
        verified=sum(1 for line in lines if line.get("verified")),
        claimed=sum(1 for line in lines if line.get("status") == "completed" and not line.get("verified")),
        limits=sum(1 for s in status if s in LIMITS),
        errors=sum(1 for s in status if s not in LIMITS and s != "completed"),
        tokens=sum(int(u.get("prompt_tokens", 0)) + int(u.get("completion_tokens", 0)) for u in usage),
        cost=sum(costs) if costs else None, wall_s=wall_s, repeat=repeat,
        pass_at_k=len(solved) / len(ids) if ids else 0.0,
        pass_at_1=(sum(1 for line in lines if line.get("verified")) / len(lines)) if lines else 0.0,
    )


def rows(s: Summary) -> list[tuple[str, str]]:
    """(label, value) pairs, the same for the terminal table and the report."""
    from loopagent.prices import shown_cost

    out = [("tasks", str(s.tasks)), ("runs", str(s.runs)), ("completed", str(s.completed)),
           ("verified", str(s.verified)), ("completed but check failed", str(s.claimed)),
           ("limits hit", str(s.limits)), ("errors", str(s.errors)), ("tokens", f"{s.tokens:,}"),
           ("cost", shown_cost(s.cost) if s.cost is not None else "unknown (no price for the model)"),
           ("wall time", f"{s.wall_s:.1f} s")]
    if s.repeat > 1:
        out += [(f"pass@{s.repeat}", f"{s.pass_at_k:.0%}"), ("pass@1", f"{s.pass_at_1:.0%}")]
    return out


def print_table(s: Summary, console) -> None:
    """The summary as a two-column Rich table on `console`."""
    from rich.table import Table

    table = Table(title="loop eval", show_header=False)
    table.add_column("what")
    table.add_column("count", justify="right")
    for label, value in rows(s):
        table.add_row(label, value)
    console.print(table)


def write_report(directory: Path, suite: Path, s: Summary, lines: list[dict]) -> Path:
    """report.md beside results.jsonl: the summary, then one row per run."""
    from loopagent.render.safe import printable

    out = [f"# loop eval: {suite.name}", "", "| | |", "|---|---|"]
    out += [f"| {label} | {value} |" for label, value in rows(s)]
    out += ["", "| task | attempt | status | verified | check exit | steps | tokens | seconds | session |",
            "|---|---|---|---|---|---|---|---|---|"]
    for line in sorted(lines, key=lambda x: (str(x["id"]), x["attempt"])):
        usage = line.get("usage") or {}
        tokens = int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
        cells = [line["id"], line["attempt"], line.get("status"), "yes" if line.get("verified") else "no",
                 line.get("check_exit_code"), line.get("steps"), tokens, line.get("duration_s"),
                 line.get("session") or ""]
        out.append("| " + " | ".join(printable(str(c)).replace("|", "\\|") for c in cells) + " |")
    path = directory / REPORT
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path
