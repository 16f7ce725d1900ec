"""Token estimates: what a message, a request and the tool schemas cost, corrected by the server's counts.

The estimate is offline and errs high; a server that reports more prompt tokens than estimated
raises the calibration factor (never lowers it), so later requests are sized by its count.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from loopagent.events import TurnTokens
from loopagent.messages import AssistantMessage, Message, ToolResult, Usage

if TYPE_CHECKING:
    from loopagent.tools.spec import ToolSpec

MESSAGE_OVERHEAD = 4  # role markers and separators a chat template adds per message
MAX_CALIBRATION = 2.0
CALIBRATE_FROM = 1000  # smaller requests are dominated by template overhead the estimate does not see

SYMBOL = re.compile(r"[^A-Za-z\s]")


@lru_cache(maxsize=16384)
def estimate_tokens(text: str) -> int:
    """Offline estimate: (UTF-8 bytes + characters that are not ASCII letters or whitespace) / 4.

    BPE vocabularies merge letters and spaces into pieces of about four characters, but digits
    and punctuation merge far less, so counting them twice brings source code and numbered
    listings to about three characters a token (prose stays near four). Bytes rather than
    characters make non-Latin text dearer. It errs high: undercounting is what overflows a window,
    and `recalibrate` scales it up when a server reports more.
    """
    if not text:
        return 0
    symbols = len(SYMBOL.findall(text))
    return math.ceil((len(text.encode("utf-8", "replace")) + symbols) / 4)


def message_tokens(msg: Message) -> int:
    """Estimated tokens of one message as it is sent (thinking is not sent back)."""
    if isinstance(msg, AssistantMessage):
        calls = sum(estimate_tokens(c.name) + estimate_tokens(c.arguments) + 8 for c in msg.tool_calls)
        return estimate_tokens(msg.text) + calls + MESSAGE_OVERHEAD
    if isinstance(msg, ToolResult):
        return estimate_tokens(msg.content) + 8 + MESSAGE_OVERHEAD
    return estimate_tokens(msg.content) + MESSAGE_OVERHEAD


def messages_tokens(messages: Sequence[Message]) -> int:
    """Estimated tokens of a sequence of messages."""
    return sum(message_tokens(m) for m in messages)


TOOL_OVERHEAD = 10  # the wrapping each tool gets in a request ({"type": "function", "function": {...}})


def tools_tokens(tools: Sequence[ToolSpec]) -> int:
    """Estimated tokens of the tools offered with every request: names, descriptions and JSON schemas."""
    return sum(estimate_tokens(json.dumps([t.name, t.description, t.parameters])) + TOOL_OVERHEAD for t in tools)


def recalibrate(calibration: float, estimated: int, counted: int) -> float:
    """The calibration after a server counted `counted` prompt tokens for an `estimated` (uncalibrated) request."""
    if estimated >= CALIBRATE_FROM and counted > estimated:
        return min(MAX_CALIBRATION, counted / estimated)
    return calibration


def turn_tokens(step: int, prompt: int, tool_tokens: int, reply: AssistantMessage) -> TurnTokens:
    """The cost of one request: the server's usage when reported, else estimates (`prompt` calibrated)."""
    share = tool_tokens / prompt if prompt else 0.0
    if reply.usage is not None:
        return TurnTokens(step, reply.usage, share, False)
    completion = message_tokens(replace(reply, thinking="")) - MESSAGE_OVERHEAD + estimate_tokens(reply.thinking)
    return TurnTokens(step, Usage(prompt, completion), share, True)
