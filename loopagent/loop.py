"""THE loop: request -> assemble -> validate -> policy -> run tools -> append results -> repeat.

It knows nothing about HTTP, terminals or disk: a model client, a tool registry,
a policy, its `Steering` and listeners are passed in. Listeners only observe; what
steers comes in explicitly: the cancel token and the `Steering` (the approver, `steer`,
`health`: the session can no longer be written, `before_change`: a checkpoint). Never raises
for anything a model does; every call gets exactly one result before the next request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from loopagent.cancel import CANCELLED, Cancel, Deadline
from loopagent.client import IncompleteTurn, ModelClient, ModelError
from loopagent.client.assemble import OutputCut
from loopagent.context import Compaction, CompactionCancelled, ContextWindow, Stop
from loopagent.details import Details
from loopagent.events import (
    AgentStart,
    AssistantDone,
    CheckRan,
    Compacted,
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
from loopagent.hooks import MAX_STOP_BLOCKS, Hooks
from loopagent.messages import AssistantMessage, Message, ToolCall, ToolResult, Usage, UserMessage
from loopagent.policy import Decision, Policy
from loopagent.reply import stream_reply
from loopagent.tools import Registry, ToolContext
from loopagent.tools.registry import Prepared
from loopagent.tools.spec import ToolSpec

if TYPE_CHECKING:
    from loopagent.output import OutputSchema, Shaped

HEADLESS_DENIAL = "this call needs approval and no one can approve in headless mode"


class Approver(Protocol):
    def approve(self, call: ToolCall, subject: str, preview: str, decision: Decision, cancel: Cancel) -> bool:
        """Ask a person; True runs the call. Once `cancel` is set, stop asking (the answer is ignored)."""
        ...


@dataclass
class Limits:
    max_steps: int = 30
    max_tokens_total: int | None = None  # prompt + completion over the run, checked before each request
    max_nudges: int = 2  # headless only: answers that ask or defer get sent back this often
    check_retries: int = 2  # a failing completion check goes back to the model this often
    time_limit: float | None = None  # wall-clock seconds of a run (--timeout): status time_limit

    def tokens_left(self, usage: Usage) -> int | None:
        return None if self.max_tokens_total is None else self.max_tokens_total - usage.total


@dataclass(frozen=True)
class Steering:
    """What steers a run besides the cancel token: each part is provided by the object that owns it (the
    session writer's health, the checkpoint recorder's step, the REPL's approver). The defaults steer
    nothing: no one to ask (headless), always healthy, no checkpoints, no price, no completion check."""

    approver: Approver | None = None  # None: headless, ASK becomes DENY
    # Messages a person typed during the turn (steering), delivered at the next turn boundary.
    steer: Callable[[], list[str]] = lambda: []
    # '' while the rim can record the run (the session file); else why the run must stop (status error).
    health: Callable[[], str] = lambda: ""
    # The step before a call that may change files runs (a checkpoint): the call and what it is about.
    before_change: Callable[[ToolCall, str], None] = lambda call, subject: None
    # What the usage so far cost in USD, when the model's price is known (loopagent/prices.py).
    price: Callable[[Usage], float | None] = lambda usage: None
    # The completion check (loopagent/check.py) after a final answer: (token, attempt) -> its outcome;
    # None: no check configured, the model's final answer ends the run.
    check: Callable[[Cancel, int], CheckRan | None] = lambda cancel, attempt: None
    # The skills the person's `$NAME`s load before the model is asked (skills/book.py): (what they typed, the
    # conversation so far) -> (the skills' blocks, which follow their message; a line for them about each).
    skills: Callable[[str, Sequence[Message]], tuple[list[str], list[str]]] = lambda typed, history: ([], [])


@dataclass(frozen=True)
class Agent:
    """Built once with everything it needs (loopagent/run/build.py); a variant is a `dataclasses.replace`."""

    model: ModelClient
    registry: Registry
    tools: ToolContext
    policy: Policy = field(default_factory=Policy)
    steering: Steering = field(default_factory=Steering)
    listeners: tuple[Listener, ...] = ()  # each hears every event, in this order
    limits: Limits = field(default_factory=Limits)
    context: ContextWindow = field(default_factory=ContextWindow)  # what each request sends
    # The user's hooks (loopagent/hooks.py): around each call the policy let through, and at the end.
    hooks: Hooks = field(default_factory=Hooks)
    output: OutputSchema | None = None  # --output-schema: what the final answer must be (loopagent/output/)

    def emit(self, event: Event) -> None:
        for listener in self.listeners:
            listener(event)

    def add(self, history: list[Message], message: Message) -> None:
        history.append(message)
        self.emit(MessageAdded(message, len(history) - 1))

    def run(self, history: list[Message], task: str, cancel: Cancel, opening: UserMessage | None = None) -> RunEnd:
        """Drive the conversation until the model answers without tool calls, a limit stops it, `cancel`
        is set, or the run can no longer be recorded (`health`). `opening`, the message this turn starts
        with, is added here: the agent's first also carries its session_start hooks' context."""
        self.emit(AgentStart(task))
        tools = replace(self.tools, cancel=cancel)  # the token reaches every tool through its context
        run = Tally(Repeats(self.emit), self.registry.specs(), Deadline(self.limits.time_limit, cancel))
        if opening is not None:
            self.add(history, self.opened(self.with_skills(opening, task, history), task, cancel))
        while True:
            if (why := self.blocked(run, cancel)) is not None:
                return self.end(run, *why)
            try:
                reply = self.ask(history, run, cancel)
            except Stop as exc:  # the context is full, the token budget is spent, or the history is broken
                return self.end(run, exc.status, str(exc))
            except OutputCut as exc:  # cut at max_tokens: nothing ran; the model is told once, then it stops
                if not self.told_cut(history, run, exc):
                    return self.end(run, "incomplete_model_turn", str(exc))
                continue
            except IncompleteTurn as exc:
                return self.end(run, "incomplete_model_turn", str(exc))
            except ModelError as exc:  # an unreachable server or a refused key is status error
                return self.end(run, exc.status, str(exc))
            self.add(history, reply)  # also a partial one: the history keeps alternating
            self.emit(AssistantDone(reply))
            if reply.tool_calls:  # each gets its one result; once cancelled or unhealthy, "not run"
                self.act(history, reply, run, tools)
            self.emit(TurnEnd(run.steps, run.usage))
            if (why := self.blocked(run, cancel, ended=not reply.tool_calls)) is not None:
                return self.end(run, *why)
            if not reply.tool_calls and not self.nudged(history, reply, run) \
                    and not self.held(history, reply, run, cancel) \
                    and not self.checked(history, run, cancel):  # a failing check sends the model back
                if (why := self.blocked(run, cancel, ended=True)) is not None:  # stopped during the check
                    return self.end(run, *why)
                failed = run.check and not run.check.passed
                return self.end(run, "check_failed") if failed else self.shaped(history, reply, run, cancel)

    def opened(self, message: UserMessage, task: str, cancel: Cancel) -> UserMessage:
        """`message` after the session_start hooks ran (once per agent): their context first, then the
        message, in one user message, so the model reads the context before the task it answers (a
        context sent after the task was taken for the task)."""
        from loopagent.session.typed import HOOK_END, HOOK_HEAD

        contexts = self.hooks.session_start(task, self.emit, cancel)
        if not contexts:
            return message
        return UserMessage("\n\n".join([*(f"{HOOK_HEAD}{c}{HOOK_END}" for c in contexts), message.content]))

    def shaped(self, history: list[Message], reply: AssistantMessage, run: Tally, cancel: Cancel) -> RunEnd:
        """The end after a final answer; with --output-schema, an invalid one gets one request more, shaped."""
        if self.output is None:
            return self.end(run, "completed")
        if (verdict := self.output.judge(reply.text)).shaped is None:
            self.emit(Notice("output", f"the answer is not valid against the output schema ({verdict.why}); asked again"))
            self.add(history, UserMessage(self.output.request(verdict.why)))
            run.tools, tools = (), run.tools
            from loopagent.client.shaped import shaped

            try:  # the same step as any: counted, planned to fit, shown, recorded
                shaping = replace(self, model=shaped(self.model, self.output.response_format()))
                reply = shaping.ask(history, run, cancel)
            except (Stop, IncompleteTurn, ModelError) as exc:
                return self.end(run, exc.status, str(exc))  # type: ignore[arg-type]
            finally:
                run.tools = tools
            self.add(history, reply)
            for event in (AssistantDone(reply), TurnEnd(run.steps, run.usage)):
                self.emit(event)
            if (why := self.blocked(run, cancel, ended=True)) is not None:  # cancelled while it streamed
                return self.end(run, *why)
            if (verdict := self.output.judge(reply.text)).shaped is None:
                return self.end(run, "output_invalid", f"the final answer is not valid against the schema: {verdict.why}")
        return self.end(run, "completed", output=verdict.shaped)

    def with_skills(self, message: UserMessage, typed: str, history: list[Message]) -> UserMessage:
        """`message` followed by the skills the person named as `$NAME` in `typed` (each loaded once)."""
        blocks, notes = self.steering.skills(typed, history)
        for note in notes:
            self.emit(Notice("skill", note))
        return UserMessage("\n\n".join([message.content, *blocks])) if blocks else message

    def told_cut(self, history: list[Message], run: Tally, cut: OutputCut) -> bool:
        """Keep a reply cut at max_tokens (its calls dropped: nothing ran) and tell the model so, once;
        False the second time, when the run must stop."""
        if run.cut or cut.partial is None:
            return False
        run.cut = True
        self.emit(Notice("cut", cut.note()))
        self.add(history, cut.partial)
        self.emit(AssistantDone(cut.partial))
        self.emit(TurnEnd(run.steps, run.usage))
        self.add(history, UserMessage(cut.note()))
        return True

    def blocked(self, run: Tally, cancel: Cancel, ended: bool = False) -> tuple[Status, str | Cancel] | None:
        """Why the run cannot go on (before a request, or after a turn), or None."""
        if cancel.is_set():  # Ctrl+C or a signal: aborted; the deadline's timer: time_limit
            return cancel.status, cancel  # type: ignore[return-value]
        if not ended and run.deadline.passed():
            return "time_limit", run.deadline.reason()
        if failure := self.steering.health():
            return "error", failure
        if ended and run.needed_approval:
            return "approval_required", HEADLESS_DENIAL
        if not ended and run.repeats.stuck:
            return "loop_detected", f"the same call returned the same result {run.repeats.count} times in a row"
        if not ended and run.steps >= self.limits.max_steps:
            from loopagent.counts import counted

            return "step_limit", f"stopped after {counted(run.steps, 'model request')} (--max-steps)"
        return None

    def ask(self, history: list[Message], run: Tally, cancel: Cancel) -> AssistantMessage:
        """One model turn: the request planned to fit (a compaction first when it must), then the reply."""
        plan = self.context.plan(history, run.tools, self.limits.tokens_left(run.usage))
        if isinstance(plan, Compaction):
            self.compaction(history, plan, run, cancel)
            plan = self.context.plan(history, run.tools, self.limits.tokens_left(run.usage), compacted=True)
        for edit in plan.edits:
            self.emit(edit)
        run.steps += 1
        self.emit(TurnStart(run.steps))
        reply = stream_reply(self.model, plan.messages, run.tools, self.emit, cancel)
        if reply.stop_reason != "interrupted":  # a partial answer has no cost record to account
            turn = self.context.account(run.steps, plan, reply)
            run.usage += turn.usage
            self.emit(turn)
        return reply

    def compaction(self, history: list[Message], plan: Compaction, run: Tally, cancel: Cancel) -> Compacted:
        """The summary turn: shown as its own step, counted, stopped by the turn's token."""
        self.emit(Notice("compact", plan.describe()))
        self.emit(TurnStart(run.steps + 1, "compact"))
        reply = stream_reply(self.model, plan.messages, [], lambda event: None, cancel)  # not shown as an answer
        if cancel.is_set():
            raise CompactionCancelled(CANCELLED)
        event = self.context.compacted(history, plan, reply)
        run.usage += event.usage
        self.emit(event)
        return event

    def compact(self, history: list[Message], cancel: Cancel, focus: str = "") -> Compacted | None:
        """`/compact [focus]` as a turn of its own; None when the history is too short to summarise."""
        plan = self.context.compaction(history, focus=focus)
        return None if plan is None else self.compaction(history, plan, Tally(Repeats(), []), cancel)

    def nudged(self, history: list[Message], reply: AssistantMessage, run: Tally) -> bool:
        """Headless: a final answer that asks or defers goes back once more, with a nudge."""
        if run.nudges >= self.limits.max_nudges or not asks_or_defers(reply.text):
            return False
        run.nudges += 1
        self.emit(Notice("nudge", f"{run.nudges}/{self.limits.max_nudges}: {QUESTION_NUDGE}"))
        self.add(history, UserMessage(QUESTION_NUDGE))
        return True

    def held(self, history: list[Message], reply: AssistantMessage, run: Tally, cancel: Cancel) -> bool:
        """A stop hook that blocks sends its reason back as a user message, at most MAX_STOP_BLOCKS times."""
        if run.hook_stops >= MAX_STOP_BLOCKS:
            return False
        if not (reason := self.hooks.stop(reply.text, self.emit, cancel)):
            return False
        run.hook_stops += 1
        self.add(history, UserMessage(reason))
        return True

    def checked(self, history: list[Message], run: Tally, cancel: Cancel) -> bool:
        """The completion check after a final answer; a failure goes back to the model (its output's tail),
        at most `check_retries` times. False when there is no check, it passed, or the retries are spent."""
        from loopagent.check import feedback

        if (ran := self.steering.check(cancel, run.check.attempt + 1 if run.check else 1)) is None:
            return False
        run.check = ran
        self.emit(ran)
        if ran.passed or cancel.is_set() or ran.attempt > self.limits.check_retries:
            return False
        self.add(history, UserMessage(feedback(ran)))
        return True

    def act(self, history: list[Message], reply: AssistantMessage, run: Tally, tools: ToolContext) -> None:
        """Run the reply's calls; each result is shown and stored only after every rewrite. A child agent's
        (`task`) model requests and tokens count as this run's."""
        tools = replace(tools, steps_left=self.limits.max_steps - run.steps, tokens_left=self.limits.tokens_left(run.usage),
                        approver=self.steering.approver)
        for call, result in self.run_calls(reply, tools):
            run.charge(result)
            run.needed_approval |= result.content.startswith(HEADLESS_DENIAL)
            result = run.repeats.observe(call, result)
            self.emit(ToolFinished(call, result))
            self.add(history, result)
        if not tools.cancel.is_set():  # a cancelled turn delivers nothing more, not even steering
            for text in self.steering.steer():
                self.add(history, UserMessage(text))

    def end(self, run: Tally, status: Status, why: str | Cancel = "", output: Shaped | None = None) -> RunEnd:
        """Emit and return the run's end; a cancel token says why and which signal stopped the run."""
        run.deadline.stop()
        if isinstance(why, Cancel):
            result = RunEnd(status, run.steps, run.usage, why.reason or CANCELLED, why.signal,
                            cost=self.steering.price(run.usage), check=run.check)
        else:
            result = RunEnd(status, run.steps, run.usage, why, cost=self.steering.price(run.usage), check=run.check,
                            output=output)
        self.emit(result)
        return result

    def run_calls(self, reply: AssistantMessage, tools: ToolContext) -> Iterator[tuple[ToolCall, ToolResult]]:
        """Every call with its result, in call order. Consecutive read-only calls run together; others
        alone, in order. Once the token is set, each call not yet run is answered "cancelled"."""
        batch: list[Prepared] = []
        for call in reply.tool_calls:
            cancelled = tools.cancel.is_set()
            health = self.steering.health
            stopped = tools.cancel.said() if cancelled else health() and f"not run: {health()}"
            admitted = self.skipped(call, stopped, cancelled) if stopped else self.hooked(self.admit(call, tools), tools)
            if isinstance(admitted, Prepared) and admitted.read_only:
                batch.append(admitted)
                continue
            yield from self.run_batch(batch, tools)
            batch = []
            if isinstance(admitted, ToolResult):
                yield call, admitted
            else:
                yield from self.run_batch([admitted], tools)
        yield from self.run_batch(batch, tools)

    def skipped(self, call: ToolCall, why: str, cancelled: bool) -> ToolResult:
        """A call taken up after the turn was cancelled (or the run cannot be recorded): shown, never run."""
        prepared = self.registry.prepare(call)
        self.emit(ToolCalled(call, prepared.subject if isinstance(prepared, Prepared) else ""))
        return ToolResult.error(why, Details("cancelled" if cancelled else "error")).answering(call)

    def admit(self, call: ToolCall, tools: ToolContext) -> Prepared | ToolResult:
        """Validate and decide one call: a runnable call, or the error result that answers it."""
        prepared = self.registry.prepare(call)
        subject = prepared.subject if isinstance(prepared, Prepared) else ""
        self.emit(ToolCalled(call, subject))
        if isinstance(prepared, ToolResult):
            return prepared
        decision = self.policy.decide(prepared.spec, prepared.arguments, prepared.read_only)
        if decision.verdict == "allow":
            return prepared
        if decision.verdict == "ask":
            if self.steering.approver is None:
                return ToolResult.error(f"{HEADLESS_DENIAL} ({decision.reason})", Details("denied")).answering(call)
            preview = prepared.preview(tools)
            approved = self.steering.approver.approve(call, subject, preview, decision, cancel=tools.cancel)
            if tools.cancel.is_set():  # Ctrl+C at the question: this call and the rest of the turn
                return ToolResult.error(CANCELLED, Details("cancelled")).answering(call)
            if approved:
                return prepared
            return ToolResult.error("denied: the user did not approve this call", Details("denied")).answering(call)
        return ToolResult.error(f"denied by policy: {decision.reason} ({decision.rule})", Details("denied")).answering(call)

    def hooked(self, admitted: Prepared | ToolResult, tools: ToolContext) -> Prepared | ToolResult:
        """A call the policy let through, unless a pre_tool hook blocks it (then it never runs)."""
        if not isinstance(admitted, Prepared):
            return admitted
        if why := self.hooks.pre_tool(admitted.call, admitted.arguments, self.emit, tools.cancel):
            return ToolResult.error(f"blocked by hook: {why}", Details("denied")).answering(admitted.call)
        return admitted

    def run_batch(self, batch: list[Prepared], tools: ToolContext) -> Iterator[tuple[ToolCall, ToolResult]]:
        """Run together (worker threads when more than one); every tool watches the token, so a cancel
        ends the batch promptly, and nothing keeps running after it."""
        if not batch:
            return
        for p in batch:
            if not p.read_only:  # the explicit step before a change: a checkpoint
                self.steering.before_change(p.call, p.subject)
            self.emit(ToolStarted(p.call, p.read_only))
        if len(batch) == 1:
            results = [self.registry.run(batch[0], tools)]
        else:
            with ThreadPoolExecutor(max_workers=min(8, len(batch))) as pool:
                results = list(pool.map(lambda p: self.registry.run(p, tools), batch))
        for p, result in zip(batch, results, strict=True):
            # post_tool hooks see what ran and may add to it (a cancelled turn runs none: see hooks.py)
            yield p.call, self.hooks.post_tool(p.call, p.arguments, result, self.emit, tools.cancel)


@dataclass
class Tally:
    """What one run has counted so far."""

    repeats: Repeats
    tools: tuple[ToolSpec, ...]  # what each request offers; the client writes their wire form
    deadline: Deadline = field(default_factory=lambda: Deadline(None, Cancel()))  # --timeout
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    needed_approval: bool = False
    nudges: int = 0
    cut: bool = False  # the model was told once that a reply was cut at max_tokens
    hook_stops: int = 0  # times a stop hook sent the model back
    check: CheckRan | None = None  # the last completion check

    def charge(self, result: ToolResult) -> None:
        """Count a child agent's model requests and tokens (a `task` result's details) as this run's."""
        d = result.details
        if d is not None and d.steps:
            self.steps += d.steps
            self.usage += Usage(d.prompt_tokens or 0, d.completion_tokens or 0)
