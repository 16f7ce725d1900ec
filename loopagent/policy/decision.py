"""What the policy answers: a verdict, why, and the rule that made it; the approval modes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Verdict = Literal["allow", "ask", "deny"]
MODES = ("ask", "edits", "all")
# Where shell commands run: inside a working sandbox, unsandboxed by choice, or unsandboxed
# because the sandbox that was wanted does not work here.
SANDBOX_STATES = ("sandboxed", "off", "unavailable")


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str = ""
    rule: str = ""
