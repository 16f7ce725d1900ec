"""The output directory: results.jsonl (one line per run, appended and flushed as it ends) and each
run's session and diff. The driver is its only writer, so a line is never written twice."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

RESULTS = "results.jsonl"
MANIFEST = "eval.json"  # written before the first run starts: a crash before any result can still be resumed
ORDER = ("id", "attempt", "status", "exit_code", "steps", "usage", "duration_s", "verified", "check_exit_code",
         "check_output", "session")  # DESIGN.md's keys first, then the extras (agent_s, message, cost_usd)


class Results:
    """results.jsonl in `directory`, with the runs it already holds (for --resume)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.path = directory / RESULTS
        self.lines: list[dict] = []
        if self.path.is_file():
            _drop_torn_tail(self.path)
            self.lines = list(read_lines(self.path))
        self.done = {(line["id"], line["attempt"]) for line in self.lines}

    def record(self, outcome: dict) -> dict:
        """Store a run's session and diff under runs/, then append its line (flushed, synced); the line."""
        line = dict(outcome["line"])
        run_dir = self.directory / "runs" / f"{_safe(line['id'])}-{line['attempt']}"
        run_dir.mkdir(parents=True, exist_ok=True)
        if outcome.get("session") is not None:
            (run_dir / "session.jsonl").write_bytes(outcome["session"])
            line["session"] = str((run_dir / "session.jsonl").relative_to(self.directory))
        (run_dir / "diff.patch").write_text(outcome.get("diff") or "", encoding="utf-8")
        line = {**{k: line.get(k) for k in ORDER}, **line}
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
            out.flush()
            os.fsync(out.fileno())
        self.lines.append(line)
        self.done.add((line["id"], line["attempt"]))
        return line


def mark(directory: Path, suite: Path, digests: dict[str, str]) -> None:
    """Write the eval's manifest into `directory` once (what suite, when), whole or not at all."""
    path = directory / MANIFEST
    if path.is_file():
        return
    import time

    part = directory / f".{MANIFEST}.part"
    part.write_text(json.dumps({"suite": str(suite.resolve()), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                "tasks": digests}, indent=1) + "\n", encoding="utf-8")
    part.replace(path)


def is_eval_dir(directory: Path) -> bool:
    """Whether `directory` is an eval's output: results, or at least the manifest of one that crashed early."""
    return (directory / RESULTS).is_file() or (directory / MANIFEST).is_file()


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line a killed writer left without its newline, so the next line starts clean."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as out:
            out.truncate(data.rfind(b"\n") + 1)


def read_lines(path: Path):
    """The complete lines of a results file; a torn last line (a killed writer) is skipped."""
    for text in path.read_text(encoding="utf-8").splitlines():
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if isinstance(line, dict) and "id" in line and "attempt" in line:
            yield line


def _safe(name: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:80]
    if safe == name:
        return safe
    # "a b" and "a_b" must not share a run directory (one's session would overwrite the other's)
    return f"{safe}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
