"""How far an eval is: a Rich progress bar on a terminal, one plain line per run otherwise."""

from __future__ import annotations

import time

from loopagent.render.safe import printable


class Progress:
    """Told of each finished run; shows done/total, verified so far, elapsed and the ETA."""

    def __init__(self, console, total: int, already: int = 0):
        self.console, self.total, self.count, self.verified = console, total, already, 0
        self.started = time.monotonic()
        self.bar = None
        if console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as Bar

            self.bar = Bar(TextColumn("eval"), BarColumn(), MofNCompleteColumn(),
                           TextColumn("verified {task.fields[verified]}"), TimeElapsedColumn(),
                           TextColumn("eta"), TimeRemainingColumn(), console=console, transient=True)
            self.task = self.bar.add_task("eval", total=total, completed=already, verified=0)

    def __enter__(self) -> Progress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def ran(self, line: dict) -> None:
        """One run ended with this results line."""
        self.count += 1
        self.verified += bool(line.get("verified"))
        if self.bar is not None:
            self.bar.update(self.task, advance=1, verified=self.verified)
            return
        verdict = "verified" if line.get("verified") else "not verified"
        self.console.print(f"[{self.count}/{self.total}] {printable(str(line['id']))} #{line['attempt']}: "
                           f"{line.get('status')}, {verdict} ({line.get('duration_s', 0):.1f} s)",
                           markup=False, highlight=False, soft_wrap=True)

    def failed(self, key: tuple[str, int], message: str) -> None:
        """A run the harness could not carry out."""
        self.console.print(f"harness failure in {printable(key[0])} #{key[1]}: {printable(message)}",
                           markup=False, highlight=False, soft_wrap=True)
