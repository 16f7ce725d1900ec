"""A `task` call's child agent, made from the parent run's parts (DESIGN "Modes, plans and delegation").

The child is an Agent of its own: its own context window and history, its own session file (whose header
names the parent session, so `loop sessions --tree` shows it under the parent), its own model client (a
parallel child must not share a connection). It is never looser than its parent: explore runs in approval
mode plan (read tools and the shell in the sandbox with the workspace read-only), every other agent in the
parent's mode; its tools are at most the parent's, without `task` (no grandchildren). Its model requests
and tokens are charged to the parent (the loop's `Tally.charge`), it starts with what the parent has left,
and it runs under the parent turn's cancel token: Ctrl+C, --timeout and a cancelled turn stop it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from loopagent.details import Details
from loopagent.events import AgentStart, Event, SessionStarted, ToolCalled, TurnStart
from loopagent.messages import AssistantMessage, Message, SystemMessage, ToolResult, UserMessage
from loopagent.render.safe import printable
from loopagent.tools.task_agents import AgentDef

if TYPE_CHECKING:
    from loopagent.run.build import Built, Host
    from loopagent.run.record import Recording
    from loopagent.tools import ToolContext

CHILD_RULES = ("You are a child agent started by another agent for one task. Nothing of its conversation is "
               "visible to you: the task below is all you know. Work through the tools, then end with one "
               "final answer that is complete on its own (what you found, with paths and line numbers, or what "
               "you did): it is all the other agent will see.")
READ_EFFECTS = ("read", "exec")  # explore: read tools, and the shell (read-only in the sandbox)


@dataclass
class Children:
    """The spawner the parent's `task` tool calls, with what it knows of the parent: its parts (`built`) and
    its session (`rec`, which names the parent in a child's header)."""

    agents: dict[str, AgentDef]
    host: Host
    built: Built | None = None  # bound once the parent's parts exist (run/build.py `prepare`)
    rec: Recording | None = None  # the parent's session (None: a run without one)
    lock: threading.Lock = field(default_factory=threading.Lock)
    started: int = 0  # children so far: each progress line's key
    # A front-end's own view of each child at work (loop acp): (the parent's task call id, "step 3, 2 calls ·
    # read_file a.txt"), then (that id, None) once the child ended. Called on the child's thread.
    watch: Callable[[str, str | None], None] | None = None

    def parent(self, agent: str) -> dict | None:
        """The `parent` of a child's header: the parent's session, and its reply that made the call."""
        if self.rec is None:
            return None
        history = self.rec.history
        at = next((i for i in range(len(history) - 1, -1, -1) if isinstance(history[i], AssistantMessage)), 0)
        return {"session": self.rec.id, "message": at, "agent": agent}

    def run(self, description: str, prompt: str, agent: str, ctx: ToolContext) -> ToolResult:
        found = self.agents.get(agent)
        if found is None:
            return ToolResult.error(f"no agent named {agent!r}; agents: {', '.join(self.agents)}")
        if (ctx.steps_left is not None and ctx.steps_left < 1) or (ctx.tokens_left is not None and ctx.tokens_left < 1):
            return ToolResult.error("no model requests or tokens are left for a child agent (--max-steps, "
                                    "--max-tokens-total); answer with what you have")
        if self.built is None or self.built.agent is None:
            return ToolResult.error("task is not available in this run")
        if not hasattr(self.built.agent.model, "sibling"):  # a replay's recorded turns: no server to ask
            return ToolResult.error("task cannot start a child agent when the model's turns are replayed")
        with self.lock:
            self.started += 1
            key = self.started
        return Child(self, found, description, prompt, key).run(ctx)


@dataclass
class Child:
    family: Children
    agent_def: AgentDef
    description: str
    prompt: str
    key: int

    def run(self, ctx: ToolContext) -> ToolResult:
        from loopagent.session import SessionWriteError

        parent = self.family.built.agent  # type: ignore[union-attr]
        mode = self.mode(parent.policy.mode)
        started = time.monotonic()
        progress = Progress(self.family.built.renderer, self.key, f"{self.agent_def.name}: {self.description}",
                            self.family.watch, ctx.call_id)
        try:
            writer, head = self.session(mode)
        except (SessionWriteError, OSError) as exc:
            return ToolResult.error(f"the child's session could not be written: {exc}")
        try:
            agent, history = self.agent(parent, ctx, mode, writer, progress)
            agent.emit(SessionStarted(writer.id, str(writer.path), agent.context.ctx_size, "parent", head))
            agent.add(history, SystemMessage(self.system(agent, mode)))
            end = agent.run(history, self.prompt, ctx.cancel, UserMessage(self.prompt))
        finally:
            writer.close()
            progress.done()
        answer = next((m.text for m in reversed(history) if isinstance(m, AssistantMessage) and m.text.strip()), "")
        return self.result(end, answer, writer.id, time.monotonic() - started)

    def mode(self, parent_mode: str) -> str:
        from loopagent.policy import stricter

        return stricter("plan", parent_mode) if self.agent_def.read_only else parent_mode

    def session(self, mode: str):
        from loopagent.session import SessionWriteError, SessionWriter, header, new_path

        built, family = self.family.built, self.family
        settings = built.settings  # type: ignore[union-attr]
        workspace = built.tools.workspace.root  # type: ignore[union-attr]
        parent = family.parent(self.agent_def.name)
        for number in range(1, 50):  # parallel children named alike in one second: the next number
            with family.lock:
                path = new_path(family.host.home, workspace, f"task {self.description}", number=number)
                try:
                    writer = SessionWriter.create(path)
                except SessionWriteError:
                    continue
            writer.discard_unanswered = False
            head = header(path.stem, workspace, settings.model, settings.base_url, self.prompt,
                          parent, mode)
            return writer, head
        raise SessionWriteError("no free session file name")

    def agent(self, parent: Any, ctx: ToolContext, mode: str, writer: Any, progress: Progress):
        from loopagent.context import ContextWindow
        from loopagent.loop import Agent, Limits, Steering
        from loopagent.policy import Policy
        from loopagent.sandbox import ReadOnlyWhen
        from loopagent.tools import Registry

        built, p = self.family.built, parent.policy
        settings = built.settings  # type: ignore[union-attr]
        tools = [t for t in parent.registry.tools.values() if self.offered(t.spec())]
        registry = Registry(tools)
        policy = Policy(mode, p.rules, p.root, sandbox=p.sandbox, sandbox_problem=p.sandbox_problem,
                        resolve=p.resolve, tools=registry.specs(), floor=mode)
        # the parent's executors, so what they start (the network proxy) ends with the parent's run
        shared = ctx.executor if isinstance(ctx.executor, ReadOnlyWhen) else ReadOnlyWhen(ctx.executor, bool)
        executor = ReadOnlyWhen(shared.normal, lambda: policy.mode == "plan", shared.walled)
        context = replace(ctx, executor=executor, may_read=policy.may_read,
                          explicitly_allows=policy.explicitly_allows, steps_left=None, tokens_left=None, approver=None)
        steps = min(n for n in (ctx.steps_left, self.agent_def.max_steps, settings.max_steps) if n is not None)
        limits = Limits(max_steps=steps, max_tokens_total=ctx.tokens_left, max_nudges=0, check_retries=0)
        steering = Steering(approver=ctx.approver, health=writer.health)
        agent = Agent(model=parent.model.sibling(), registry=registry, tools=context,
                      policy=policy, steering=steering, listeners=(writer, progress), limits=limits,
                      context=ContextWindow(settings.ctx_size, settings.max_tokens), hooks=parent.hooks)
        history: list[Message] = []
        return agent, history

    def offered(self, spec: Any) -> bool:
        if spec.name == "task":
            return False
        if self.agent_def.tools is not None and spec.name not in self.agent_def.tools:
            return False
        return spec.effect in READ_EFFECTS if self.agent_def.read_only else True

    def system(self, agent: Any, mode: str) -> str:
        from loopagent.prompt import system_prompt

        built = self.family.built
        settings = built.settings  # type: ignore[union-attr]
        base = system_prompt(list(agent.registry.tools), workspace=agent.tools.workspace.root, cwd=self.family.host.cwd,
                             limit=settings.instructions_max_bytes, ctx_size=settings.ctx_size, mode=mode)
        extra = f"\n\n# Agent {self.agent_def.name}\n{self.agent_def.body}" if self.agent_def.body else ""
        return f"{base}\n\n# Child agent\n{CHILD_RULES}{extra}"

    def result(self, end: Any, answer: str, session: str, seconds: float) -> ToolResult:
        counts = f"{end.steps} model request{'s' if end.steps != 1 else ''}, {seconds:.1f} s"
        tail = f"[task {self.agent_def.name}: {end.status}, {counts}; child session {session}]"
        details = Details(session=session, steps=end.steps, prompt_tokens=end.usage.prompt_tokens,
                          completion_tokens=end.usage.completion_tokens)
        if end.status == "completed":
            return ToolResult.ok(f"{answer}\n\n{tail}", details=details)
        outcome = "cancelled" if end.status == "aborted" else "error"
        why = f"the child agent stopped before it finished: {end.status} ({end.message})"
        text = f"{why}\nIts last answer: {answer}\n\n{tail}" if answer else f"{why}\n\n{tail}"
        return ToolResult.error(text, replace(details, outcome=outcome))


class Progress:
    """A child's steps and its latest call: one updating line per child under the parent's turn (a terminal),
    and what the front-end's `watch` is told, keyed by the parent's call (loop acp: updates of that call)."""

    def __init__(self, renderer: Any, key: int, label: str,
                 watch: Callable[[str, str | None], None] | None = None, call_id: str = ""):
        self.renderer, self.key, self.label = renderer, key, printable(label)
        self.watch, self.call_id = watch, call_id
        self.steps = self.calls = 0
        self.last = ""

    def __call__(self, event: Event) -> None:
        if self.renderer is None and self.watch is None:
            return
        if isinstance(event, TurnStart):
            self.steps = event.step
        elif isinstance(event, ToolCalled):
            self.calls += 1
            self.last = printable(f"{event.call.name} {event.subject}".strip())
        elif not isinstance(event, AgentStart):
            return
        last = f" · {self.last}" if self.last else ""
        now = f"step {self.steps}, {self.calls} calls{last}"
        if self.renderer is not None:
            self.renderer.child_line(self.key, f"task {self.label} · {now}")
        if self.watch is not None:
            self.watch(self.call_id, now)

    def done(self) -> None:
        if self.renderer is not None:
            self.renderer.child_line(self.key, None)
        if self.watch is not None:
            self.watch(self.call_id, None)
