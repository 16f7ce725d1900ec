"""THE loop: request -> assemble -> validate -> policy -> run tools -> append results -> repeat.

It knows nothing about HTTP, terminals or disk: a model client, a tool registry,
a policy, an approver and listeners are passed in. Never raises for anything a
model does; every call gets exactly one result before the next request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Protocol

from loopagent.cancel import CANCELLED, Cancel
from loopagent.client import IncompleteTurn, ModelClient, ModelError
from loopagent.context import ContextWindow, Stop
from loopagent.events import (
    AgentStart,
    AssistantDone,
    Event,
    Listener,
    MessageAdded,
    Notice,
    RunEnd,
    Status,
    ToolCalled,
    ToolFinished,
    ToolStarted,
    TurnEnd,
    TurnStart,
)
from loopagent.guards import QUESTION_NUDGE, Repeats, asks_or_defers
from loopagent.messages import AssistantMessage, Message, ToolCall, ToolResult, Usage, UserMessage
from loopagent.policy import Decision, Policy
from loopagent.reply import stream_reply
from loopagent.tools import Registry, ToolContext
from loopagent.tools.registry import Prepared

HEADLESS_DENIAL = "this call needs approval and no one can approve in headless mode"


class Approver(Protocol):
    def approve(self, call: ToolCall, subject: str, preview: str, decision: Decision,
                cancel: Cancel | None = None) -> bool:
        """Ask a person; True runs the call. Once `cancel` is set, stop asking (the answer is ignored)."""
        ...


@dataclass
class Limits:
    max_steps: int = 30
    max_tokens_total: int | None = None  # prompt + completion over the run, checked before each request
    max_nudges: int = 2  # headless only: answers that ask or defer get sent back this often

    def tokens_left(self, usage: Usage) -> int | None:
        return None if self.max_tokens_total is None else self.max_tokens_total - usage.total


@dataclass
class Agent:
    model: ModelClient
    registry: Registry
    tools: ToolContext
    policy: Policy = field(default_factory=Policy)
    approver: Approver | None = None  # None: headless, ASK becomes DENY
    listeners: list[Listener] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)
    context: ContextWindow = field(default_factory=ContextWindow)  # what each request sends
    # Messages a person typed during the turn (steering), delivered at the next turn boundary.
    steer: Callable[[], list[str]] = lambda: []

    def emit(self, event: Event) -> None:
        for listener in self.listeners:
            listener(event)

    def add(self, history: list[Message], message: Message) -> None:
        history.append(message)
        self.emit(MessageAdded(message, len(history) - 1))

    def run(self, history: list[Message], task: str = "", cancel: Cancel | None = None) -> RunEnd:
        """Drive the conversation until the model answers without tool calls, a limit stops it, or `cancel` is set."""
        self.emit(AgentStart(task))
        cancel = cancel or Cancel()
        tools = replace(self.tools, cancel=cancel)  # the token reaches every tool through its context
        run, schemas = Tally(Repeats(self.emit)), self.registry.schemas()
        while True:
            if cancel.is_set():
                return self.end(run, "aborted", cancel)
            if run.steps >= self.limits.max_steps:
                return self.end(run, "step_limit", f"stopped after {run.steps} model requests (--max-steps)")
            try:
                request = self.context.prepare(history, schemas, self.model, self.emit,
                                               self.limits.tokens_left(run.usage), cancel=cancel)
                run.usage += request.spent
                run.steps += 1
                self.emit(TurnStart(run.steps))
                reply = stream_reply(self.model, request.messages, schemas, self.emit, cancel)
            except Stop as exc:  # the context is full, the token budget is spent, or the history is broken
                return self.end(run, exc.status, str(exc))
            except IncompleteTurn as exc:
                return self.end(run, "incomplete_model_turn", str(exc))
            except ModelError as exc:
                return self.end(run, "model_error", str(exc))
            if reply.stop_reason != "interrupted":  # a partial answer has no cost record to account
                turn = self.context.account(run.steps, request, reply)
                run.usage += turn.usage
                self.emit(turn)
            self.add(history, reply)  # also a partial one: the history keeps alternating
            self.emit(AssistantDone(reply))
            if cancel.is_set():
                self.emit(TurnEnd(run.steps, run.usage))
                return self.end(run, "aborted", cancel)
            if not reply.tool_calls:
                self.emit(TurnEnd(run.steps, run.usage))
                if run.needed_approval:
                    return self.end(run, "approval_required", HEADLESS_DENIAL)
                if run.nudges < self.limits.max_nudges and asks_or_defers(reply.text):
                    run.nudges += 1
                    self.emit(Notice("nudge", f"{run.nudges}/{self.limits.max_nudges}: {QUESTION_NUDGE}"))
                    self.add(history, UserMessage(QUESTION_NUDGE))
                    continue
                return self.end(run, "completed")
            for call, result in self.run_calls(reply, tools):
                run.needed_approval |= result.content.startswith(HEADLESS_DENIAL)
                self.add(history, run.repeats.observe(call, result))
            if not cancel.is_set():  # a cancelled turn delivers nothing more, not even steering
                for text in self.steer():
                    self.add(history, UserMessage(text))
            self.emit(TurnEnd(run.steps, run.usage))
            if run.repeats.stuck and not cancel.is_set():
                return self.end(run, "loop_detected",
                                f"the same call returned the same result {run.repeats.count} times in a row")

    def end(self, run: Tally, status: Status, why: str | Cancel = "") -> RunEnd:
        """Emit and return the run's end; a cancel token says why and which signal stopped the run."""
        if isinstance(why, Cancel):
            result = RunEnd(status, run.steps, run.usage, why.reason or CANCELLED, why.signal)
        else:
            result = RunEnd(status, run.steps, run.usage, why)
        self.emit(result)
        return result

    def run_calls(self, reply: AssistantMessage, tools: ToolContext) -> Iterator[tuple[ToolCall, ToolResult]]:
        """Every call with its result, in call order. Consecutive read-only calls run together; others
        alone, in order. Once the token is set, each call not yet run is answered "cancelled"."""
        batch: list[Prepared] = []
        for call in reply.tool_calls:
            admitted = self.cancelled(call) if tools.cancel.is_set() else self.admit(call, tools)
            if isinstance(admitted, Prepared) and admitted.tool.read_only:
                batch.append(admitted)
                continue
            yield from self.run_batch(batch, tools)
            batch = []
            if isinstance(admitted, ToolResult):
                self.emit(ToolFinished(call, admitted))
                yield call, admitted
            else:
                yield from self.run_batch([admitted], tools)
        yield from self.run_batch(batch, tools)

    def cancelled(self, call: ToolCall) -> ToolResult:
        """A call taken up after the turn was cancelled: shown, never run, answered "cancelled"."""
        prepared = self.registry.prepare(call)
        self.emit(ToolCalled(call, prepared.tool.subject(prepared.args) if isinstance(prepared, Prepared) else ""))
        return ToolResult.error(CANCELLED).answering(call)

    def admit(self, call: ToolCall, tools: ToolContext) -> Prepared | ToolResult:
        """Validate and decide one call: a runnable call, or the error result that answers it."""
        prepared = self.registry.prepare(call)
        subject = prepared.tool.subject(prepared.args) if isinstance(prepared, Prepared) else ""
        self.emit(ToolCalled(call, subject))
        if isinstance(prepared, ToolResult):
            return prepared
        decision = self.policy.decide(call.name, prepared.args.model_dump(), prepared.tool.read_only)
        if decision.verdict == "allow":
            return prepared
        if decision.verdict == "ask":
            if self.approver is None:
                return ToolResult.error(f"{HEADLESS_DENIAL} ({decision.reason})").answering(call)
            preview = prepared.tool.preview(prepared.args, tools)
            approved = self.approver.approve(call, subject, preview, decision, cancel=tools.cancel)
            if tools.cancel.is_set():  # Ctrl+C at the question: this call and the rest of the turn
                return ToolResult.error(CANCELLED).answering(call)
            if approved:
                return prepared
            return ToolResult.error("denied: the user did not approve this call").answering(call)
        return ToolResult.error(f"denied by policy: {decision.reason} ({decision.rule})").answering(call)

    def run_batch(self, batch: list[Prepared], tools: ToolContext) -> Iterator[tuple[ToolCall, ToolResult]]:
        """Run together (worker threads when more than one); every tool watches the token, so a cancel
        ends the batch promptly, and nothing keeps running after it."""
        if not batch:
            return
        for p in batch:
            self.emit(ToolStarted(p.call, p.tool.read_only))
        if len(batch) == 1:
            results = [self.registry.run(batch[0], tools)]
        else:
            with ThreadPoolExecutor(max_workers=min(8, len(batch))) as pool:
                results = list(pool.map(lambda p: self.registry.run(p, tools), batch))
        for p, result in zip(batch, results, strict=True):
            self.emit(ToolFinished(p.call, result))
            yield p.call, result


@dataclass
class Tally:
    """What one run has counted so far."""

    repeats: Repeats
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    needed_approval: bool = False
    nudges: int = 0
