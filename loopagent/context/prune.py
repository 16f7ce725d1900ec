"""Pruning: stubs for superseded tool results, and clips of large ones (older turns first, the newest
turn only when the request would not fit otherwise).

Each decision is recorded on the view and sticks, so the prompt prefix (the server's cache) stays
the same from one request to the next until room has to be made again.
"""

from __future__ import annotations

import json
import math
import posixpath
from collections.abc import Sequence
from typing import TYPE_CHECKING

from loopagent.context.estimate import estimate_tokens, message_tokens
from loopagent.messages import AssistantMessage, Message, ToolCall, ToolResult

if TYPE_CHECKING:
    from loopagent.context.view import View

CLIP_MIN = 300  # tool results below this many tokens are not worth clipping
CLIP_KEEP = 1600  # characters a clipped older result keeps (head + tail)
MARKER_TOKENS = 30  # what the clip marker itself costs
KEEP_AT_LEAST = 200  # characters a clipped newest result keeps however tight the window


KEPT_TOOL = "load_skill"  # its results are a skill's instructions (loopagent/skills/)
KEPT_HEAD = '<skill name="'


def is_kept(msg: Message) -> bool:
    """A result that guides the rest of the work (a loaded skill): never stubbed or clipped, and sent
    again after a compaction summarised the turn it came in."""
    return isinstance(msg, ToolResult) and msg.name == KEPT_TOOL and not msg.is_error \
        and msg.content.startswith(KEPT_HEAD)


def clip_text(text: str, keep: int) -> str:
    """Head and tail of `text` within about `keep` characters; the tail (errors, verdicts) gets more."""
    if len(text) <= keep:
        return text
    from loopagent.clip import clip  # the one clipping scheme and marker

    return clip(text, keep * 2 // 5, keep * 3 // 5, note="to save context; run the tool again to see them")


def last_turn(history: Sequence[Message]) -> int:
    """Index of the newest assistant message (len(history) when there is none); its results follow it."""
    return next((i for i in range(len(history) - 1, -1, -1) if isinstance(history[i], AssistantMessage)),
                len(history))


# ---- stubs ------------------------------------------------------------------------------------

def calls_by_result(history: Sequence[Message]) -> dict[int, ToolCall]:
    """History index of each tool result -> the call it answers (ids are only unique per turn)."""
    out: dict[int, ToolCall] = {}
    calls: dict[str, ToolCall] = {}
    for i, msg in enumerate(history):
        if isinstance(msg, AssistantMessage):
            calls = {c.id: c for c in msg.tool_calls}
        elif isinstance(msg, ToolResult) and msg.call_id in calls:
            out[i] = calls[msg.call_id]
    return out


def _args(call: ToolCall) -> dict:
    try:
        args = json.loads(call.arguments or "{}")
    except ValueError:
        return {}
    return args if isinstance(args, dict) else {}


def _path(args: dict) -> str | None:
    path = args.get("path")
    return posixpath.normpath(path) if isinstance(path, str) and path else None


def _span(args: dict) -> tuple[int, float]:
    offset = args.get("offset") if isinstance(args.get("offset"), int) else 0
    limit = args.get("limit") if isinstance(args.get("limit"), int) else 2000
    return offset, offset + limit


def superseded(history: Sequence[Message], start: int = 0) -> dict[int, str]:
    """History index -> stub, for results from `start` on that later results made obsolete.

    A read is superseded by a later read of the same file covering the same lines, or goes stale
    when the file is written or edited later; a command's output by a later run of the same command.
    """
    calls = calls_by_result(history)
    stubs: dict[int, str] = {}
    open_reads: dict[str, list[tuple[int, tuple[int, float]]]] = {}
    open_runs: dict[str, int] = {}
    for i in sorted(calls):
        call, result = calls[i], history[i]
        assert isinstance(result, ToolResult)
        args = _args(call)
        path = _path(args)
        if call.name == "shell" and isinstance(args.get("command"), str):
            earlier = open_runs.get(args["command"])
            if earlier is not None and earlier >= start:
                stubs[earlier] = f"[superseded: this command ran again later (call {call.id}); see that output]"
            open_runs[args["command"]] = i
        if path is None or result.is_error:
            continue
        if call.name == "read_file":
            span = _span(args)
            for j, old in open_reads.get(path, []):
                if j >= start and span[0] <= old[0] and span[1] >= old[1]:
                    stubs[j] = f"[superseded: {path} was read again later (call {call.id}); the newer content is there]"
            open_reads.setdefault(path, []).append((i, span))
        elif call.name in ("edit_file", "write_file"):
            for j, _ in open_reads.pop(path, []):
                if j >= start:
                    stubs[j] = (f"[stale: {path} was changed later by {call.name} (call {call.id}); "
                                "read it again for its current text]")
    return stubs


def stub_superseded(view: View, history: Sequence[Message], start: int) -> None:
    """Record a stub for every result from `start` on that a later result made obsolete."""
    for i, stub in superseded(history, start).items():
        view.stubs[history[i]] = stub


# ---- clips ------------------------------------------------------------------------------------

def clip_older(view: View, history: Sequence[Message], span: range, total: int, low: int, cap: int,
               scale: float) -> int:
    """Clip large results in history[span], oldest first, to CLIP_KEEP until `total` is at most `low`.

    Returns the new total. The total is updated per clip rather than re-estimated: re-estimating the
    whole view after every clip made one call quadratic in the number of tool results.
    """
    for i in span:
        if total <= low:
            break
        msg = history[i]
        if not isinstance(msg, ToolResult) or msg in view.stubs or is_kept(msg) \
                or estimate_tokens(msg.content) <= CLIP_MIN:
            continue
        keep = view.clips.get(msg)
        if keep is not None and keep <= CLIP_KEEP:
            continue
        before = message_tokens(view.shown(msg, cap))
        view.clips[msg] = CLIP_KEEP
        total -= math.floor((before - message_tokens(view.shown(msg, cap))) * scale)
    return total


def water_level(sizes: Sequence[int], budget: int) -> int:
    """The largest share `a` with sum(min(size, a)) <= budget: small results stay whole, large ones
    share what the small ones leave."""
    left, n = budget, len(sizes)
    for k, size in enumerate(sorted(sizes)):
        share = left // (n - k)
        if size > share:
            return max(0, share)
        left -= size
    return max(sizes, default=0)


def clip_newest(view: View, history: Sequence[Message], total: int, limit: int, floor: int, cap: int,
                scale: float) -> int:
    """Clip the newest turn's results together, just enough for `total` to reach `limit`, but not
    below `floor` tokens for all of them; returns the new total.

    They are what the model just asked for, so this comes last, and it clips to the limit rather
    than to the low-water mark. A few parallel reads can each fit the per-result cap and still,
    together, not fit the window; without this the run would stop although a clip would have fit.
    """
    results = [m for m in history[last_turn(history) + 1:]
               if isinstance(m, ToolResult) and m not in view.stubs and not is_kept(m)]
    for _ in range(4):  # a clip's size is estimated from the share of characters kept: close, not exact
        if total <= limit or not results:
            break
        sizes = [estimate_tokens(view.shown(m, cap).content) for m in results]
        budget = max(floor, sum(sizes) - math.ceil((total - limit) / scale))
        if budget >= sum(sizes):
            break
        level = water_level(sizes, budget)
        for msg, size in zip(results, sizes, strict=True):
            if size <= level:
                continue
            keep = len(msg.content) * max(0, level - MARKER_TOKENS) // max(1, estimate_tokens(msg.content))
            old = view.clips.get(msg)
            keep = max(KEEP_AT_LEAST, keep if old is None else min(old, keep))
            before = message_tokens(view.shown(msg, cap))
            view.clips[msg] = keep
            total -= math.floor((before - message_tokens(view.shown(msg, cap))) * scale)
    return total
