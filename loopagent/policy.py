"""Permission policy: ALLOW, ASK or DENY for each call before it runs. Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Verdict = Literal["allow", "ask", "deny"]
MODES = ("ask", "edits", "all")


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str = ""
    rule: str = ""


class Policy:
    """Mode-based decisions. Read-only tools are allowed in every mode."""

    def __init__(self, mode: str = "edits"):
        if mode not in MODES:
            raise ValueError(f"approval mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode

    def decide(self, tool: str, args: dict, read_only: bool) -> Decision:
        if read_only or self.mode == "all":
            return Decision("allow", rule=f"mode {self.mode}")
        if self.mode == "edits" and tool in ("write_file", "edit_file"):
            return Decision("allow", rule="mode edits")
        return Decision("ask", reason=f"{tool} needs approval in mode {self.mode}", rule=f"mode {self.mode}")
