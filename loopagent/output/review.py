"""`loop review`'s values: the findings schema, the task sent with the diff, the lines CI prints, the exit code.

The findings come back through the same mechanism as `--output-schema` (loop.py: one request more
with `response_format` when the answer is not valid), so a local server's grammar holds even a small
model to this shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from loopagent.clip import clip

SEVERITIES = ("P0", "P1", "P2", "P3")  # most severe first
FINDINGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "findings": {"type": "array", "items": {
            "type": "object",
            "properties": {"file": {"type": "string"}, "line": {"type": "integer", "minimum": 0},
                           "severity": {"enum": list(SEVERITIES)}, "title": {"type": "string"},
                           "body": {"type": "string"}},
            "required": ["file", "line", "severity", "title", "body"], "additionalProperties": False}},
        "summary": {"type": "string"},
    },
    "required": ["findings", "summary"], "additionalProperties": False,
}
CLIP_NOTE = "to fit the context; read the changed files whole with read_file"
TASK = """Review the code change below as a careful senior engineer would before it is merged.
Find real problems that the change introduces: bugs, security holes, data loss, crashes, races, broken
error handling, wrong behaviour for edge cases, missing or wrong tests. Read the changed files and
whatever else you need with the read-only tools; you cannot change anything. Do not report style
preferences or things the change did not touch.

Severity: P0 must not ship (data loss, a security hole, a crash on the main path); P1 a real bug to fix
before merging; P2 a bug in an edge case or a risky gap; P3 a minor issue worth a note.

Answer with only a JSON object, no other text:
{{"findings": [{{"file": "path/in/repo", "line": N, "severity": "P1", "title": "one line",
"body": "why it is wrong and how to fix it"}}], "summary": "one or two sentences"}}
`line` is the line in the new version of the file (0 when it is about the whole file). An empty
`findings` list is a fine answer when the change is sound.

The change ({what}):

```diff
{diff}
```"""


def review_task(diff: str, what: str, budget: int) -> str:
    """The task: instructions and the diff, clipped to `budget` characters with the clip marker."""
    shown = clip(diff, budget * 2 // 3, budget // 3, note=CLIP_NOTE)  # cut at line breaks, the marker on its own line
    return TASK.format(what=what, diff=shown.replace("```", "`\u200b``"))


def diff_budget(ctx_size: int) -> int:
    """Characters of diff the first request may hold: about a quarter of the context window (3 to 4 characters
    a token), leaving room for the system prompt, the tools, the files the model reads and its answer."""
    return max(4_000, ctx_size)


@dataclass(frozen=True)
class Verdict:
    """The review's outcome for CI: the findings, the summary, and whether it fails at `fail_on`."""

    findings: list[dict[str, Any]]
    summary: str
    fail_on: str

    @property
    def failing(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if SEVERITIES.index(f["severity"]) <= SEVERITIES.index(self.fail_on)]

    @property
    def exit_code(self) -> int:
        return 1 if self.failing else 0

    def lines(self) -> list[str]:
        """`path:line: P1 title` per finding, most severe first, its body indented under it."""
        from loopagent.render.safe import printable

        out = []
        for f in sorted(self.findings, key=lambda f: (SEVERITIES.index(f["severity"]), f["file"], f["line"])):
            out.append(printable(f"{f['file']}:{f['line']}: {f['severity']} {' '.join(f['title'].split())}"))
            out += [printable(f"    {line}".rstrip()) for line in f["body"].splitlines()]
        return out

    def as_json(self) -> str:
        return json.dumps({"findings": self.findings, "summary": self.summary, "fail_on": self.fail_on,
                           "failed": bool(self.failing), "exit_code": self.exit_code}, ensure_ascii=False)

    def tally(self) -> str:
        """One line for stderr: counts per severity and the gate's outcome."""
        counts = ", ".join(f"{s} {sum(f['severity'] == s for f in self.findings)}" for s in SEVERITIES)
        gate = f"{len(self.failing)} at or above {self.fail_on}: failing" if self.failing else \
            f"none at or above {self.fail_on}: passing"
        return f"review: {len(self.findings)} finding{'' if len(self.findings) == 1 else 's'} ({counts}); {gate}"
