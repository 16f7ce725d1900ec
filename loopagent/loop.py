"""THE loop: request -> assemble -> validate -> policy -> run tools -> append results -> repeat.

It knows nothing about HTTP, terminals or disk: a model client, a tool registry,
a policy, an approver and listeners are passed in. Never raises for anything a
model does; every call gets exactly one result before the next request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Protocol

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
from loopagent.tools import Registry, ToolContext
from loopagent.tools.registry import Prepared

HEADLESS_DENIAL = "this call needs approval and no one can approve in headless mode"
CANCELLED = "cancelled by the user"


class Approver(Protocol):
    def approve(self, call: ToolCall, subject: str, preview: str, decision: Decision) -> bool:
        """Ask a person; True runs the call."""
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

    def run(self, history: list[Message], task: str = "") -> RunEnd:
        """Drive the conversation until the model answers without tool calls or a limit stops it."""
        self.emit(AgentStart(task))
        self.tools.cancel.clear()
        steps, usage, needed_approval = 0, Usage(), False
        nudges, repeats = 0, Repeats(self.emit)
        schemas = self.registry.schemas()

        def end(status: Status, message: str = "") -> RunEnd:
            result = RunEnd(status, steps, usage, message)
            self.emit(result)
            return result

        while True:
            if steps >= self.limits.max_steps:
                return end("step_limit", f"stopped after {steps} model requests (--max-steps)")
            try:
                request = self.context.prepare(history, schemas, self.model, self.emit,
                                               self.limits.tokens_left(usage))
                usage += request.spent
                steps += 1
                self.emit(TurnStart(steps))
                reply = self.model.complete(request.messages, schemas, self.emit)
            except Stop as exc:  # the context is full, the token budget is spent, or the history is broken
                return end(exc.status, str(exc))
            except KeyboardInterrupt:  # Ctrl+C: leaving the `with` closed the stream; nothing was added
                return end("aborted", CANCELLED)
            except IncompleteTurn as exc:
                return end("incomplete_model_turn", str(exc))
            except ModelError as exc:
                return end("model_error", str(exc))
            turn = self.context.account(steps, request, reply)
            usage += turn.usage
            self.emit(turn)
            self.add(history, reply)
            self.emit(AssistantDone(reply))
            if not reply.tool_calls:
                self.emit(TurnEnd(steps, usage))
                if needed_approval:
                    return end("approval_required", HEADLESS_DENIAL)
                if nudges < self.limits.max_nudges and asks_or_defers(reply.text):
                    nudges += 1
                    self.emit(Notice("nudge", f"{nudges}/{self.limits.max_nudges}: {QUESTION_NUDGE}"))
                    self.add(history, UserMessage(QUESTION_NUDGE))
                    continue
                return end("completed")
            try:
                for call, result in zip(reply.tool_calls, self.run_calls(reply), strict=False):
                    needed_approval |= result.content.startswith(HEADLESS_DENIAL)
                    self.add(history, repeats.observe(call, result))
            except KeyboardInterrupt:
                self.cancel_rest(history, reply)
                self.emit(TurnEnd(steps, usage))
                return end("aborted", CANCELLED)
            for text in self.steer():
                self.add(history, UserMessage(text))
            self.emit(TurnEnd(steps, usage))
            if repeats.stuck:
                return end("loop_detected", f"the same call returned the same result {repeats.count} times in a row")

    def cancel_rest(self, history: list[Message], reply: AssistantMessage) -> None:
        """Ctrl+C during the calls: every call still unanswered gets an error result, so the history stays valid."""
        answered = set()
        for message in reversed(history):
            if message is reply:
                break
            if isinstance(message, ToolResult):
                answered.add(message.call_id)
        for call in reply.tool_calls:
            if call.id not in answered:
                result = ToolResult.error(CANCELLED).answering(call)
                self.emit(ToolFinished(call, result))
                self.add(history, result)

    def run_calls(self, reply: AssistantMessage) -> Iterable[ToolResult]:
        """Results in call order. Consecutive read-only calls run together; others alone, in order."""
        batch: list[Prepared] = []
        for call in reply.tool_calls:
            admitted = self.admit(call)
            if isinstance(admitted, Prepared) and admitted.tool.read_only:
                batch.append(admitted)
                continue
            yield from self.run_batch(batch)
            batch = []
            if isinstance(admitted, ToolResult):
                self.emit(ToolFinished(call, admitted))
                yield admitted
            else:
                yield from self.run_batch([admitted])
        yield from self.run_batch(batch)

    def admit(self, call: ToolCall) -> Prepared | ToolResult:
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
            preview = prepared.tool.preview(prepared.args, self.tools)
            if self.approver.approve(call, subject, preview, decision):
                return prepared
            return ToolResult.error("denied: the user did not approve this call").answering(call)
        return ToolResult.error(f"denied by policy: {decision.reason} ({decision.rule})").answering(call)

    def run_batch(self, batch: list[Prepared]) -> Iterable[ToolResult]:
        """Run in worker threads, so Ctrl+C reaches the main thread at once; then cancel and wait."""
        if not batch:
            return
        for p in batch:
            self.emit(ToolStarted(p.call, p.tool.read_only))
        pool = ThreadPoolExecutor(max_workers=min(8, len(batch)))
        futures, interrupted = [], False
        try:
            futures = [pool.submit(self.registry.run, p, self.tools) for p in batch]
            wait(futures)
        except KeyboardInterrupt:
            self.tools.cancel.set()  # the shell tool kills its process tree; queued calls never start
            interrupted = True
        finally:
            pool.shutdown(wait=True, cancel_futures=True)  # nothing keeps running after the turn
        for p, future in zip(batch, futures, strict=False):
            if future.done() and not future.cancelled():
                self.emit(ToolFinished(p.call, future.result()))
                yield future.result()
        if interrupted:
            raise KeyboardInterrupt
