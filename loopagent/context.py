"""Context discipline: what the model sees of the history, and what each request costs.

Pure: the history goes in, the messages to send come out. The history list itself is never
changed (the session file keeps everything); stubs, clips and the compaction summary exist only
in the view. When a request would not fit in ctx_size minus the output reserve, room is made in
this order, each step only if the one before was not enough:

1. stub superseded tool results (a read of a file that was read again or changed later, the
   output of a command that ran again later) with one line that says where the newer content is;
2. clip the oldest large tool results to head + tail with a marker;
3. compact: the model summarises the older turns; the request becomes system prompt + task +
   every later user message verbatim + summary + the recent turns, call/result pairs intact.

Room is made down to a low-water mark, not just under the limit, so the next turns do not pay
again and the prompt prefix (the server's cache) stays stable between those steps.
"""

from __future__ import annotations

import json
import math
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from loopagent.client import ModelClient
from loopagent.events import Compacted, Event, TurnTokens
from loopagent.guards import is_nudge
from loopagent.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)

LOW_WATER = 0.6  # after making room the request is at most this share of the limit
KEEP_RECENT = 0.35  # compaction keeps recent turns up to this share of the limit verbatim
KEEP_ON_DEMAND = 0.1  # ...and less when a person asked for it (/compact): they want the room
RESULT_CAP = 0.5  # no single tool result may fill more than this share of the room the prompt leaves
CLIP_MIN = 300  # tool results below this many tokens are not worth clipping
CLIP_KEEP = 1600  # characters a clipped result keeps (head + tail)
MESSAGE_OVERHEAD = 4  # role markers and separators a chat template adds per message
MAX_CALIBRATION = 2.0

SYMBOL = re.compile(r"[^A-Za-z\s]")
SUMMARY_HEADER = "[Summary of the earlier conversation, written by you when the context was compacted. " \
                 "The full transcript is in the session file; the most recent turns follow verbatim.]"
SUMMARY_SYSTEM = "You summarise a coding agent's work so that it can continue after its context is compacted."
SUMMARY_PROMPT = """Write a working summary of the transcript above; it will replace those turns in your context.
Be specific (paths, function names, commands, error messages) and cover:
- files read and what matters in them;
- changes made: file, what, and why, and whether they were checked;
- commands run and their outcome (tests passing or failing, errors);
- decisions taken and facts learned;
- what remains to do, next step first.
Do not repeat the task or the user's messages: they are kept verbatim. Plain text only."""


class Stop(Exception):
    """The run cannot go on; `status` is the RunEnd status to report."""

    status = "error"


class ContextFull(Stop):
    """Even after compaction the request does not fit in the context window (a limit: exit 3)."""

    status = "token_limit"


class BudgetSpent(Stop):
    """The next request would take the run over --max-tokens-total."""

    status = "token_limit"


class BrokenHistory(Stop):
    """A call without its result or a result without its call: never sent to a server."""

    status = "error"


# ---- token estimates ------------------------------------------------------------------------

@lru_cache(maxsize=16384)
def estimate_tokens(text: str) -> int:
    """Offline estimate: (UTF-8 bytes + characters that are not ASCII letters or whitespace) / 4.

    BPE vocabularies merge letters and spaces into pieces of about four characters, but digits
    and punctuation merge far less, so counting them twice brings source code and numbered
    listings to about three characters a token (prose stays near four). Bytes rather than
    characters make non-Latin text dearer. It errs high: undercounting is what overflows a window,
    and `ContextWindow.account` scales it up when a server reports more.
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
    return sum(message_tokens(m) for m in messages)


def tools_tokens(tools: list[dict]) -> int:
    """Estimated tokens of the tool schemas sent with every request."""
    return estimate_tokens(json.dumps(tools)) if tools else 0


# ---- history checks -------------------------------------------------------------------------

def check_pairing(messages: Sequence[Message]) -> None:
    """Raise BrokenHistory unless every call is followed by its result and every result has its call."""
    pending: list[str] = []
    for i, msg in enumerate(messages):
        if isinstance(msg, ToolResult):
            if msg.call_id not in pending:
                raise BrokenHistory(f"message {i}: tool result {msg.call_id!r} answers no call")
            pending.remove(msg.call_id)
            continue
        if pending:
            raise BrokenHistory(f"message {i}: call(s) {', '.join(pending)} have no result")
        if isinstance(msg, AssistantMessage):
            pending = [c.id for c in msg.tool_calls]
    if pending:
        raise BrokenHistory(f"call(s) {', '.join(pending)} at the end of the history have no result")


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
        args, path = _args(call), _path(_args(call))
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


def clip_text(text: str, keep: int) -> str:
    """Head and tail of `text` within about `keep` characters; the tail (errors, verdicts) gets more."""
    if len(text) <= keep:
        return text
    head, tail = text[: keep * 2 // 5], text[-(keep * 3 // 5):]
    hidden = text[len(head): len(text) - len(tail)]
    return (f"{head}\n[... {hidden.count(chr(10)) + 1} lines ({len(hidden)} characters) clipped to save "
            f"context; run the tool again to see them ...]\n{tail}")


def turn_starts(history: Sequence[Message], start: int) -> list[int]:
    """Indices from `start` where a turn begins (a user or assistant message), never inside a pair."""
    return [i for i in range(start, len(history)) if isinstance(history[i], (UserMessage, AssistantMessage))]


# ---- the window -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Request:
    """The messages to send and their estimated size."""

    messages: list[Message]
    tokens: int  # estimated prompt tokens: messages + tool schemas, calibrated
    tool_tokens: int  # of which tool results
    spent: Usage = Usage()  # tokens a compaction used to make this request fit


def _noop(event: Event) -> None:
    pass


@dataclass
class ContextWindow:
    """The view of a history that fits in `ctx_size - reserve` tokens, and the token accounting."""

    ctx_size: int = 16384
    reserve: int = 4096  # the output budget (max_tokens) every request asks for
    stubs: dict[int, str] = field(default_factory=dict)
    clipped: set[int] = field(default_factory=set)
    summary: str = ""
    upto: int = 0  # history[:upto] after the task is covered by `summary`
    calibration: float = 1.0  # server-counted / estimated prompt tokens, only ever >= 1
    # history index -> (original result, how it is shown, the shown copy): see `shown`
    _shown: dict[int, tuple[ToolResult, tuple, ToolResult]] = field(default_factory=dict, repr=False)
    _summary_message: UserMessage | None = field(default=None, repr=False)
    fixed: int = 0  # tokens of the tool schemas of the last request

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
        cap_tokens = self.result_cap(history)
        out = self.head(history)
        for i in range(self.tail_start(history), len(history)):
            msg = history[i]
            if isinstance(msg, ToolResult):
                msg = self.shown(i, msg, cap_tokens)
            out.append(msg)
        return out

    def head(self, history: Sequence[Message]) -> list[Message]:
        """What precedes the verbatim turns: all of them before a compaction; after one, the system
        prompt, the task, every later user message verbatim, then the summary."""
        if not self.summary:
            return []
        task = self.task_index(history)
        out: list[Message] = [m for m in history[:task] if isinstance(m, SystemMessage)]
        out.append(history[task])
        out += [m for m in history[task + 1: self.upto] if isinstance(m, UserMessage) and not is_nudge(m.content)]
        text = f"{SUMMARY_HEADER}\n\n{self.summary}"
        if self._summary_message is None or self._summary_message.content != text:
            self._summary_message = UserMessage(text)  # one object per summary: see `shown`
        out.append(self._summary_message)
        return out

    def tail_start(self, history: Sequence[Message]) -> int:
        return self.upto if self.summary else 0

    def result_cap(self, history: Sequence[Message]) -> int:
        """The most tokens one tool result may take: a share of what system prompt and tools leave."""
        system = sum(message_tokens(m) for m in history[:1] if isinstance(m, SystemMessage))
        return max(CLIP_MIN, int((self.limit - self.fixed - system) * RESULT_CAP))

    def shown(self, i: int, msg: ToolResult, cap_tokens: int) -> ToolResult:
        """The result as sent: stubbed, clipped, or as it is. The same object from turn to turn,
        so the client's per-message encoding cache keeps working."""
        if i in self.stubs:
            variant: tuple = ("stub", self.stubs[i])
        elif i in self.clipped:
            variant = ("clip", CLIP_KEEP)
        else:
            size = estimate_tokens(msg.content)
            if size <= cap_tokens:
                return msg
            variant = ("cap", len(msg.content) * cap_tokens // size)
        hit = self._shown.get(i)
        if hit is not None and hit[0] is msg and hit[1] == variant:
            return hit[2]
        kind, arg = variant
        view = replace(msg, content=arg if kind == "stub" else clip_text(msg.content, arg))
        self._shown[i] = (msg, variant, view)
        return view

    def prepare(self, history: Sequence[Message], tools: list[dict], model: ModelClient,
                emit: Callable[[Event], None] = _noop, budget: int | None = None) -> Request:
        """The request to send next, making room first if needed. Raises a `Stop` when it cannot.

        `budget` is what is left of --max-tokens-total (None: no budget); a request, including a
        compaction request, that would exceed it is not sent.
        """
        self.fixed = tools_tokens(tools)
        spent = Usage()
        messages = self.view(history)
        if self.tokens(messages) > self.limit:
            messages = self.make_room(history)
        if self.tokens(messages) > self.limit:
            event = self.compact(history, model, emit, budget=budget, required=True)
            spent = event.usage if event else spent
            messages = self.view(history)
            if self.tokens(messages) > self.limit:
                raise ContextFull(
                    f"the context is full even after compaction: the request needs ~{self.tokens(messages)} "
                    f"tokens, the limit is {self.limit} (--ctx-size {self.ctx_size} minus {self.ctx_size - self.limit} "
                    "for the answer); raise --ctx-size or ask for smaller tool outputs")
        check_pairing(messages)
        request = self.request(messages)
        if budget is not None and spent.total + request.tokens > budget:
            raise BudgetSpent(f"the next request (~{request.tokens} tokens) would exceed --max-tokens-total")
        return replace(request, spent=spent)

    def request(self, messages: list[Message]) -> Request:
        tool_tokens = sum(message_tokens(m) for m in messages if isinstance(m, ToolResult))
        return Request(messages, self.tokens(messages), math.ceil(tool_tokens * self.calibration))

    def make_room(self, history: Sequence[Message]) -> list[Message]:
        """Steps 1 and 2: stub superseded results, then clip the oldest large ones (not the last turn).

        The running total is updated per clip rather than re-estimated: re-estimating the whole view
        after every clip made one call quadratic in the number of tool results.
        """
        start = self.tail_start(history)
        self.stubs.update(superseded(history, start))
        total, low = self.tokens(self.view(history)), int(self.limit * LOW_WATER)
        cap = self.result_cap(history)
        last_turn = next((i for i in range(len(history) - 1, -1, -1) if isinstance(history[i], AssistantMessage)),
                         len(history))
        for i in range(start, last_turn):
            if total <= low:
                break
            msg = history[i]
            if (isinstance(msg, ToolResult) and i not in self.stubs and i not in self.clipped
                    and estimate_tokens(msg.content) > CLIP_MIN):
                before = message_tokens(self.shown(i, msg, cap))
                self.clipped.add(i)
                total -= math.floor((before - message_tokens(self.shown(i, msg, cap))) * self.calibration)
        return self.view(history)

    def compact(self, history: Sequence[Message], model: ModelClient, emit: Callable[[Event], None] = _noop,
                focus: str = "", budget: int | None = None, required: bool = False) -> Compacted | None:
        """Step 3, also `/compact [focus]`: summarise the older turns, keep the recent ones verbatim.

        Returns the Compacted event it emitted, or None when there is nothing old enough to summarise
        (with `required`, that raises ContextFull instead). Model failures propagate.
        """
        before = self.tokens(self.view(history))
        upto = self.keep_from(history, KEEP_RECENT if required else KEEP_ON_DEMAND)
        if upto <= max(self.tail_start(history), self.task_index(history) + 1):
            if required:
                raise ContextFull(f"the context is full (~{before} tokens, limit {self.limit}) and nothing older is "
                                  "left to summarise; raise --ctx-size or ask for smaller tool outputs")
            return None
        messages = self.summary_request(history, upto, focus)
        asked = messages_tokens(messages)
        if budget is not None and asked > budget:
            raise BudgetSpent(f"compacting the context (~{asked} tokens) would exceed --max-tokens-total")
        reply = model.complete(messages, [], _noop)
        summary = reply.text.strip()
        if not summary:
            raise ContextFull("compaction failed: the model returned an empty summary")
        usage = reply.usage or Usage(asked, estimate_tokens(reply.text))
        self.summary, self.upto = summary, upto
        after = self.view(history)
        check_pairing(after)
        event = Compacted(summary, upto, before, self.tokens(after), usage, focus)
        emit(event)
        return event

    def restore(self, event: Compacted) -> None:
        """Take up a compaction recorded earlier (a resumed session)."""
        self.summary, self.upto = event.summary, event.upto

    def reset(self) -> None:
        """Forget stubs, clips and summary: they name history indices, so call it when the history is
        replaced or cut (/clear, /rewind). The calibration is kept: it belongs to the server."""
        self.stubs, self.clipped, self.summary, self.upto = {}, set(), "", 0
        self._shown.clear()

    def task_index(self, history: Sequence[Message]) -> int:
        return next((i for i, m in enumerate(history) if isinstance(m, UserMessage)), 0)

    def keep_from(self, history: Sequence[Message], share: float) -> int:
        """Where the verbatim tail starts: the oldest turn start whose turns fit `share` of the limit;
        always at least the last turn."""
        starts = turn_starts(history, max(self.tail_start(history), self.task_index(history) + 1))
        if not starts:
            return len(history)
        cap, budget = self.result_cap(history), int(self.limit * share)
        keep, end, kept = starts[-1], len(history), 0
        for s in reversed(starts):
            turn = [self.shown(i, history[i], cap) if isinstance(history[i], ToolResult) else history[i]
                    for i in range(s, end)]
            kept, end = kept + messages_tokens(turn), s
            if kept > budget:
                break
            keep = s
        return keep

    def summary_request(self, history: Sequence[Message], upto: int, focus: str) -> list[Message]:
        """The messages that ask for a summary of history[..upto], sized to fit the window."""
        task = history[self.task_index(history)]
        intro = f"The task: {task.content if isinstance(task, UserMessage) else ''}\n\n"
        if self.summary:
            intro += f"Summary of the work before this transcript:\n{self.summary}\n\n"
        words = max(100, int(self.limit * 0.1))  # about 0.13 of the limit in tokens
        ask = SUMMARY_PROMPT + f"\nKeep it under {words} words." + (f"\nFocus especially on: {focus}" if focus else "")
        room = self.limit - estimate_tokens(SUMMARY_SYSTEM + intro + ask) - 50
        start = max(self.tail_start(history), self.task_index(history) + 1)
        part = range(start, upto)
        cap = 4000
        while True:
            lines = [self.transcript_line(i, history[i], cap) for i in part]
            text = "\n".join(lines)
            if estimate_tokens(text) <= room or cap <= 200:
                break
            cap //= 2
        while estimate_tokens(text) > room and len(lines) > 1:
            lines = lines[len(lines) // 4 or 1:]  # drop the oldest quarter: the end matters most
            text = "[... earlier turns omitted ...]\n" + "\n".join(lines)
        body = f"{intro}<transcript>\n{text}\n</transcript>\n\n{ask}"
        return [SystemMessage(SUMMARY_SYSTEM), UserMessage(body)]

    def transcript_line(self, i: int, msg: Message, cap: int) -> str:
        if isinstance(msg, ToolResult):
            content = self.stubs.get(i) or clip_text(msg.content, cap)
            return f"[result of {msg.name}{' (error)' if msg.is_error else ''}]\n{content}"
        if isinstance(msg, AssistantMessage):
            calls = "".join(f"\n[call {c.name} {clip_text(c.arguments, cap)}]" for c in msg.tool_calls)
            return f"[assistant] {msg.text}{calls}"
        return f"[{msg.role}] {msg.content}"

    def account(self, step: int, request: Request, reply: AssistantMessage) -> TurnTokens:
        """The cost of one request: the server's usage when reported, else estimates. Calibrates the
        estimator upwards when the server counts more than we estimated."""
        share = request.tool_tokens / request.tokens if request.tokens else 0.0
        if reply.usage is not None:
            raw = request.tokens / self.calibration
            if raw >= 1000 and reply.usage.prompt_tokens > raw:
                self.calibration = min(MAX_CALIBRATION, reply.usage.prompt_tokens / raw)
            return TurnTokens(step, reply.usage, share, False)
        completion = message_tokens(replace(reply, thinking="")) - MESSAGE_OVERHEAD + estimate_tokens(reply.thinking)
        return TurnTokens(step, Usage(request.tokens, completion), share, True)
