"""Why a request cannot be sent: the `Stop` exceptions the loop turns into a RunEnd status.

They are defined in the one error tree (loopagent/errors.py) and importable from here as before.
"""

from __future__ import annotations

from loopagent.errors import BrokenHistory, BudgetSpent, CompactionCancelled, ContextFull, Stop

__all__ = ["BrokenHistory", "BudgetSpent", "CompactionCancelled", "ContextFull", "Stop"]
