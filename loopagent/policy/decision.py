"""What the policy answers: a verdict, why, and the rule that made it; the approval modes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Verdict = Literal["allow", "ask", "deny"]
MODES = ("ask", "edits", "all", "plan")
# Strictness, loosest first: a project file or an agent definition may only move right.
STRICTNESS = ("all", "edits", "ask", "plan")


def stricter(mode: str, than: str) -> str:
    """The stricter of two approval modes."""
    return mode if STRICTNESS.index(mode) >= STRICTNESS.index(than) else than
# Where shell commands run: inside a working sandbox, unsandboxed by choice, or unsandboxed
# because the sandbox that was wanted does not work here.
SANDBOX_STATES = ("sandboxed", "off", "unavailable")


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str = ""
    rule: str = ""
