"""Context discipline: what the model sees of the history, and what each request costs.

Pure: the history goes in, the messages to send come out; the history itself is never changed.

- `estimate`: token estimates and their calibration by the server's counts;
- `view`: the messages sent for a history, with edits keyed by message identity;
- `prune`: stubs of superseded results and clips of large ones;
- `compact`: the summary that replaces the older turns;
- `window`: `ContextWindow`, which decides when each of those is needed; its `plan` raises the
  `Stop`s of the error tree (loopagent/errors.py) that end a run.
"""

from loopagent.context.compact import KEEP_ON_DEMAND, KEEP_RECENT, SUMMARY_PROMPT, SUMMARY_SYSTEM, Compaction
from loopagent.context.estimate import estimate_tokens, message_tokens, messages_tokens, tools_tokens
from loopagent.context.prune import CLIP_KEEP, CLIP_MIN, clip_text, superseded
from loopagent.context.view import SUMMARY_HEADER, Edits, Summary, View, check_pairing
from loopagent.context.window import LOW_WATER, RESULT_CAP, ContextWindow, Request
from loopagent.errors import BrokenHistory, BudgetSpent, CompactionCancelled, ContextFull, Stop

__all__ = [
    "CLIP_KEEP", "CLIP_MIN", "KEEP_ON_DEMAND", "KEEP_RECENT", "LOW_WATER", "RESULT_CAP", "SUMMARY_HEADER",
    "SUMMARY_PROMPT", "SUMMARY_SYSTEM", "BrokenHistory", "BudgetSpent", "Compaction", "CompactionCancelled",
    "ContextFull", "ContextWindow", "Edits",
    "Request", "Stop", "Summary", "View", "check_pairing", "clip_text", "estimate_tokens", "message_tokens",
    "messages_tokens", "superseded", "tools_tokens",
]
