"""Checks a run passes before its first request: a task from a pipe, a context window that can hold the prompt.

Each failure is a UsageError: one line naming the numbers, exit 2, nothing sent to a server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, BinaryIO

from loopagent.errors import UsageError

if TYPE_CHECKING:
    from loopagent.run.build import Built


def piped_task(stdin: BinaryIO | None) -> str | None:
    """The task piped on stdin (`echo task | loop agent`), or None for a terminal, a closed or an empty stdin."""
    if stdin is None:
        return None
    try:
        if stdin.isatty():
            return None
        text = stdin.read().decode("utf-8", "replace").strip()
    except (OSError, ValueError):  # closed or unreadable: as if nothing was piped
        return None
    return text or None


def check_window(built: Built, task: str | None) -> None:
    """Refuse a context size that cannot hold the system prompt, tool specs and task plus the reply reserve.

    Checked on the window in force (after any resolution of the size), with the same estimate and
    reserve the context manager uses, so a size that passes here can send its first request.
    """
    from loopagent.context.estimate import message_tokens, tools_tokens
    from loopagent.messages import SystemMessage, UserMessage

    window = built.context
    first = [SystemMessage(built.system), *([UserMessage(task)] if task else [])]
    fixed = sum(map(message_tokens, first)) + tools_tokens(built.registry.specs())
    if fixed <= window.limit:
        return
    reserve = window.ctx_size - window.limit
    least = least_size(fixed, built.fitted.asked_max_tokens)
    raise UsageError(
        f"context size {window.ctx_size:,} ({built.fitted.window.label}) is too small: the system prompt, tools and task take "
        f"~{fixed:,} tokens and a reply needs {reserve:,} more (max_tokens {window.reserve:,}, at most half "
        f"the window); use --ctx-size {least:,} or more")


def least_size(fixed: int, max_tokens: int) -> int:
    """The smallest context size whose prompt limit holds `fixed` tokens, with the reply budget that size gets."""
    from loopagent.run.discovery import reply_budget

    # high always fits (the budget is at most half); fits(size) only turns true once: see reply_budget
    low, high = fixed + 1, 2 * fixed + max_tokens + 256
    while low < high:
        mid = (low + high) // 2
        if mid - reply_budget(mid, max_tokens) >= fixed:
            high = mid
        else:
            low = mid + 1
    return low
