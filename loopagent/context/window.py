"""The context window: the request to send next, sized to fit `ctx_size - reserve`, and its cost."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from loopagent.client import ModelClient
from loopagent.context import compact as compaction
from loopagent.context.compact import Compaction
from loopagent.context.estimate import message_tokens, messages_tokens, recalibrate, tools_tokens, turn_tokens
from loopagent.context.prune import CLIP_MIN, clip_newest, clip_older, last_turn, stub_superseded
from loopagent.context.stops import BudgetSpent, ContextFull
from loopagent.context.view import Summary, View, check_pairing
from loopagent.events import Compacted, ContextEdit, Event, TurnTokens
from loopagent.messages import AssistantMessage, Message, SystemMessage, ToolResult, Usage

if TYPE_CHECKING:
    from loopagent.tools.spec import ToolSpec

LOW_WATER = 0.6  # after making room the request is at most this share of the limit
RESULT_CAP = 0.5  # no single tool result may fill more than this share of the room the prompt leaves


@dataclass(frozen=True)
class Request:
    """The messages to send and their estimated size."""

    messages: list[Message]
    tokens: int  # estimated prompt tokens: messages + tool schemas, calibrated
    tool_tokens: int  # of which tool results
    spent: Usage = Usage()  # tokens a compaction used to make this request fit (`prepare` only)
    edits: tuple[ContextEdit, ...] = ()  # results first sent other than as the history holds them


def _noop(event: Event) -> None:
    pass


@dataclass
class ContextWindow:
    """The view of a history that fits in `ctx_size - reserve` tokens, and the token accounting."""

    ctx_size: int = 16384
    reserve: int = 4096  # the output budget (max_tokens) every request asks for
    calibration: float = 1.0  # server-counted / estimated prompt tokens, only ever >= 1
    fixed: int = 0  # tokens of the tool schemas of the last request
    view_state: View = field(default_factory=View, repr=False)

    @property
    def limit(self) -> int:
        """Prompt tokens a request may hold. A reserve larger than half a small window is cut to half,
        so `--ctx-size 4000` still leaves room for a conversation."""
        return self.ctx_size - min(self.reserve, self.ctx_size // 2)

    def tokens(self, messages: Sequence[Message]) -> int:
        """Estimated prompt tokens of a request with these messages."""
        return math.ceil((messages_tokens(messages) + self.fixed) * self.calibration)

    def view(self, history: Sequence[Message]) -> list[Message]:
        """The messages to send for `history` with the current stubs, clips and summary."""
        return self.view_state.render(history, self.result_cap(history))

    def result_cap(self, history: Sequence[Message]) -> int:
        """The most tokens one tool result may take: a share of what system prompt and tools leave."""
        system = sum(message_tokens(m) for m in history[:1] if isinstance(m, SystemMessage))
        return max(CLIP_MIN, int((self.limit - self.fixed - system) * RESULT_CAP))

    def plan(self, history: Sequence[Message], tools: Sequence[ToolSpec], budget: int | None = None,
             compacted: bool = False) -> Request | Compaction:
        """The request to send next, making room first if needed; or the compaction that must run first
        (never again once `compacted`). Raises a `Stop` when it cannot fit.

        Room is made in this order, each step only if the ones before were not enough: stubs of
        superseded results and clips of older large ones (down to a low-water mark), clips of the
        newest turn's results (down to the limit, the results keeping at least one result's cap),
        compaction, then the newest results clipped further. `budget` is what is left of
        --max-tokens-total (None: no budget); a request that would exceed it is not sent.
        """
        self.fixed = tools_tokens(tools)
        messages = self.view(history)
        if self.tokens(messages) > self.limit:
            messages = self.make_room(history)
        if self.tokens(messages) > self.limit:
            step = None if compacted else compaction.plan(self, history, budget=budget, required=True)
            if step is not None:
                return step
            messages = self.fit_newest(history, CLIP_MIN)
            if self.tokens(messages) > self.limit:
                raise ContextFull(self.full(messages, compacted))
        check_pairing(messages)
        request = self.request(messages, self.edits(history))
        if budget is not None and request.tokens > budget:
            raise BudgetSpent(f"the next request (~{request.tokens} tokens) would exceed --max-tokens-total")
        return request

    def compaction(self, history: Sequence[Message], focus: str = "", budget: int | None = None) -> Compaction | None:
        """`/compact [focus]`: the summary request for the older turns now; None when the history is short."""
        return compaction.plan(self, history, focus, budget)

    def compacted(self, history: Sequence[Message], step: Compaction, reply: AssistantMessage) -> Compacted:
        """Take up the model's summary for `step` (the loop ran it as a turn); raises ContextFull when empty."""
        return compaction.apply(self, history, step, reply)

    def prepare(self, history: Sequence[Message], tools: list[dict], model: ModelClient,
                emit: Callable[[Event], None] = _noop, budget: int | None = None,
                cancel: compaction.Cancel | None = None) -> Request:
        """`plan`, with a needed compaction asked of `model` directly (callers without a loop). `cancel`,
        the turn's cancel token, reaches the client when a summary is requested."""
        step = self.plan(history, tools, budget)
        if not isinstance(step, Compaction):
            return step
        event = compaction.run(self, history, step, model, emit, cancel)
        left = None if budget is None else budget - event.usage.total
        return replace(self.plan(history, tools, left, compacted=True), spent=event.usage)

    def full(self, messages: list[Message], compacted: bool) -> str:
        """Why a request cannot fit, for the RunEnd message."""
        need, how = self.tokens(messages), "raise --ctx-size or ask for smaller tool outputs"
        if not compacted:
            return (f"the context is full (~{need} tokens, limit {self.limit}) and nothing older is left to "
                    f"summarise; {how}")
        return (f"the context is full even after compaction: the request needs ~{need} tokens, the limit is "
                f"{self.limit} (--ctx-size {self.ctx_size} minus {self.ctx_size - self.limit} for the answer); {how}")

    def edits(self, history: Sequence[Message]) -> tuple[ContextEdit, ...]:
        """The results the last view shows other than as stored, not announced before (rare: the index
        lookup runs only when there is one)."""
        view = self.view_state
        fresh = [(msg, shown) for msg, shown in view.take_fresh() if view.announced.get(msg) != shown.content]
        if not fresh:
            return ()
        where, start = {id(m): i for i, m in enumerate(history)}, view.tail_start(history)
        out = []
        for msg, shown in fresh:
            index = where.get(id(msg))
            if index is not None and index >= start and history[index] is msg:
                view.announced[msg] = shown.content
                out.append(ContextEdit(index, "stub" if msg in view.stubs else "clip", shown.content))
        return tuple(sorted(out, key=lambda e: e.index))

    def request(self, messages: list[Message], edits: tuple[ContextEdit, ...] = ()) -> Request:
        """A Request of these messages, sized."""
        tool_tokens = sum(message_tokens(m) for m in messages if isinstance(m, ToolResult))
        return Request(messages, self.tokens(messages), math.ceil(tool_tokens * self.calibration), edits=edits)

    def make_room(self, history: Sequence[Message]) -> list[Message]:
        """Stub superseded results and clip the oldest large ones down to the low-water mark; then, if
        the request still does not fit, clip the newest turn's results as far as one result's cap."""
        view = self.view_state
        view.forget_gone(history)
        start = view.tail_start(history)
        stub_superseded(view, history, start)
        cap = self.result_cap(history)
        total = self.tokens(self.view(history))
        total = clip_older(view, history, range(start, last_turn(history)), total, int(self.limit * LOW_WATER),
                           cap, self.calibration)
        if total > self.limit:
            return self.fit_newest(history, cap)
        return self.view(history)

    def fit_newest(self, history: Sequence[Message], floor: int) -> list[Message]:
        """The view, with the newest turn's results clipped (to no less than `floor` tokens together)
        if that is what it takes to fit."""
        messages = self.view(history)
        total = self.tokens(messages)
        if total <= self.limit:
            return messages
        clip_newest(self.view_state, history, total, self.limit, floor, self.result_cap(history), self.calibration)
        return self.view(history)

    def compact(self, history: Sequence[Message], model: ModelClient, emit: Callable[[Event], None] = _noop,
                focus: str = "", budget: int | None = None, required: bool = False,
                cancel: compaction.Cancel | None = None) -> Compacted | None:
        """`/compact [focus]`: summarise the older turns now; None when there is nothing old enough."""
        return compaction.compact(self, history, model, emit, focus, budget, required, cancel)

    def restore(self, event: Compacted, history: Sequence[Message] | None = None) -> None:
        """Take up a compaction recorded earlier (a resumed session). Its index is bound to the messages
        of `history`, or of the first history viewed when none is given."""
        self.view_state.summary = Summary(event.summary, event.upto)
        if history is not None:
            self.view(history)

    def reset(self) -> None:
        """Forget stubs, clips and summary. Never needed for correctness: edits are keyed by message
        identity, so a cut or cleared history drops them by itself. The calibration is kept."""
        self.view_state.clear()

    @property
    def summary(self) -> str:
        """The compaction summary in force ('' when none)."""
        return self.view_state.summary.text if self.view_state.summary is not None else ""

    @summary.setter
    def summary(self, text: str) -> None:
        old = self.view_state.summary
        self.view_state.summary = Summary(text, old.upto if old else 0, old.covered if old else None) if text else None

    @property
    def upto(self) -> int:
        """Index just after the messages the summary covers, as last seen (0 when none)."""
        return self.view_state.summary.upto if self.view_state.summary is not None else 0

    @upto.setter
    def upto(self, index: int) -> None:
        if self.view_state.summary is not None:  # bound to its message at the next view, as a restore is
            self.view_state.summary = Summary(self.view_state.summary.text, index)

    def account(self, step: int, request: Request, reply: AssistantMessage) -> TurnTokens:
        """The cost of one request: the server's usage when reported, else estimates. Calibrates the
        estimator upwards when the server counts more than we estimated."""
        if reply.usage is not None:
            raw = request.tokens / self.calibration
            self.calibration = recalibrate(self.calibration, raw, reply.usage.prompt_tokens)
        return turn_tokens(step, request.tokens, request.tool_tokens, reply)
