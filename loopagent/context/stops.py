"""Why a request cannot be sent: the `Stop` exceptions the loop turns into a RunEnd status."""

from __future__ import annotations


class Stop(Exception):
    """The run cannot go on; `status` is the RunEnd status to report."""

    status = "error"


class ContextFull(Stop):
    """Even after making room the request does not fit in the context window (a limit: exit 3)."""

    status = "token_limit"


class BudgetSpent(Stop):
    """The next request would take the run over --max-tokens-total."""

    status = "token_limit"


class BrokenHistory(Stop):
    """A call without its result or a result without its call: never sent to a server."""

    status = "error"


class CompactionCancelled(Stop):
    """The cancel token was set while the summary was being written: the turn stops (exit 130)."""

    status = "aborted"
