"""THE loop: request -> assemble -> validate -> policy -> run tools -> append results -> repeat.

It knows nothing about HTTP, terminals or disk: a model client, a tool registry,
a policy, an approver and listeners are passed in. Never raises for anything a
model does; every call gets exactly one result before the next request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from loopagent.client import IncompleteTurn, ModelClient, ModelError
from loopagent.events import (
    AgentStart,
    AssistantDone,
    Event,
    Listener,
    MessageAdded,
    RunEnd,
    Status,
    ToolCalled,
    ToolFinished,
    ToolStarted,
    TurnEnd,
    TurnStart,
)
from loopagent.messages import AssistantMessage, Message, ToolCall, ToolResult, Usage
from loopagent.policy import Decision, Policy
from loopagent.tools import Registry, ToolContext
from loopagent.tools.registry import Prepared

HEADLESS_DENIAL = "this call needs approval and no one can approve in headless mode"


class Approver(Protocol):
    def approve(self, call: ToolCall, subject: str, preview: str, decision: Decision) -> bool:
        """Ask a person; True runs the call."""
        ...


@dataclass
class Limits:
    max_steps: int = 30


@dataclass
class Agent:
    model: ModelClient
    registry: Registry
    tools: ToolContext
    policy: Policy = field(default_factory=Policy)
    approver: Approver | None = None  # None: headless, ASK becomes DENY
    listeners: list[Listener] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)
    prepare: Callable[[list[Message]], Sequence[Message]] = lambda history: history

    def emit(self, event: Event) -> None:
        for listener in self.listeners:
            listener(event)

    def add(self, history: list[Message], message: Message) -> None:
        history.append(message)
        self.emit(MessageAdded(message, len(history) - 1))

    def run(self, history: list[Message], task: str = "") -> RunEnd:
        """Drive the conversation until the model answers without tool calls or a limit stops it."""
        self.emit(AgentStart(task))
        steps, usage, needed_approval = 0, Usage(), False
        schemas = self.registry.schemas()

        def end(status: Status, message: str = "") -> RunEnd:
            result = RunEnd(status, steps, usage, message)
            self.emit(result)
            return result

        while True:
            if steps >= self.limits.max_steps:
                return end("step_limit", f"stopped after {steps} model requests (--max-steps)")
            steps += 1
            self.emit(TurnStart(steps))
            try:
                reply = self.model.complete(self.prepare(history), schemas, self.emit)
            except IncompleteTurn as exc:
                return end("incomplete_model_turn", str(exc))
            except ModelError as exc:
                return end("model_error", str(exc))
            usage += reply.usage or Usage()
            self.add(history, reply)
            self.emit(AssistantDone(reply))
            if not reply.tool_calls:
                self.emit(TurnEnd(steps, usage))
                if needed_approval:
                    return end("approval_required", HEADLESS_DENIAL)
                return end("completed")
            for result in self.run_calls(reply):
                needed_approval |= result.content.startswith(HEADLESS_DENIAL)
                self.add(history, result)
            self.emit(TurnEnd(steps, usage))

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
        for p in batch:
            self.emit(ToolStarted(p.call, p.tool.read_only))
        if len(batch) > 1:
            with ThreadPoolExecutor(max_workers=min(8, len(batch))) as pool:
                results = list(pool.map(lambda p: self.registry.run(p, self.tools), batch))
        else:
            results = [self.registry.run(p, self.tools) for p in batch]
        for p, result in zip(batch, results, strict=True):
            self.emit(ToolFinished(p.call, result))
            yield result
