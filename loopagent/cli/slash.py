"""Slash commands of the REPL. Each is a function (repl, argument, prompt) -> exit code or None."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loopagent.cli.recap import NOTE
from loopagent.cli.restore import files_note, restore_in_repl, tell_model, undone_note
from loopagent.counts import counted
from loopagent.messages import AssistantMessage, Usage, UserMessage

if TYPE_CHECKING:
    from loopagent.cli.repl import Repl

Handler = Callable[["Repl", str, Any], "int | None"]


@dataclass(frozen=True)
class Command:
    run: Handler
    help: str


COMMANDS: dict[str, Command] = {}


def command(name: str, help: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        COMMANDS[name] = Command(fn, help)
        return fn

    return register


def dispatch(repl: Repl, line: str, prompt: Any) -> int | None:
    """Run one slash command line; an exit code ends the REPL. Errors are one line, never a traceback."""
    name, _, arg = line.strip().partition(" ")
    cmd = COMMANDS.get(name)
    if cmd is None:
        repl.renderer.say(f"unknown command {name}; commands: {' '.join(COMMANDS)}", "red")
        return None
    try:
        return cmd.run(repl, arg.strip(), prompt)
    except Exception as exc:  # a failing command must not end the session
        repl.renderer.say(f"error: {name} failed: {exc}", "red")
        return None


def service(repl: Repl, name: str) -> Any:
    """A part that another module provides (checkpoints, sessions, context), or None when it is off."""
    return repl.services.get(name) or getattr(repl.agent, name, None)


def session_service(repl: Repl, name: str) -> Any:
    """A service of the session file (`sessions`, `fork_session`, `session_path`), or None after saying so."""
    found = repl.services.get(name)
    if found is None:
        repl.renderer.say("sessions are not available in this build", "yellow")
    return found


def history_replaced(repl: Repl) -> None:
    """After /clear or /rewind the toolbar's estimate starts over; the context window's edits are keyed
    by message identity, so those of messages that left the history are gone with them."""
    from loopagent.context import messages_tokens

    repl.context_used = messages_tokens(repl.history)


def checkpoint_store(repl: Repl) -> Any:
    """The checkpoint store, or None after telling the user that checkpoints are off."""
    store = service(repl, "checkpoints")
    if store is None:
        repl.renderer.say("checkpoints are off", "yellow")
    return store


@command("/help", "list the commands")
def show_help(repl: Repl, arg: str, prompt: Any) -> None:
    for name, cmd in COMMANDS.items():
        repl.renderer.say(f"  {name:<13} {cmd.help}")
    from loopagent.cli.slash_prompt import show_templates

    show_templates(repl)  # the person's prompt templates (cli/templates.py)
    repl.renderer.say("  Esc+Enter or a trailing \\ adds a line; Ctrl+C cancels a turn; Ctrl+D exits.", "dim")


@command("/exit", "leave (exit code 0)")
def leave(repl: Repl, arg: str, prompt: Any) -> int:
    return 0


@command("/model", "show or switch the model: /model NAME")
def model(repl: Repl, arg: str, prompt: Any) -> None:
    if not arg:
        repl.renderer.say(f"model: {repl.settings.model}")
        return
    client = repl.agent.model
    if hasattr(client, "model"):
        client.model = arg
    repl.settings = repl.settings.model_copy(update={"model": arg})
    repl.renderer.say(f"model: {arg}")


@command("/approval", "show or switch the approval mode: /approval ask|edits|all")
def approval(repl: Repl, arg: str, prompt: Any) -> None:
    from loopagent.policy import MODES

    policy = repl.agent.policy
    if not arg:
        repl.renderer.say(f"approval: {policy.mode}")
        return
    if arg not in MODES:
        repl.renderer.say(f"error: approval mode must be one of {', '.join(MODES)}", "red")
        return
    policy.mode = arg
    repl.settings = repl.settings.model_copy(update={"approval": arg})
    repl.renderer.say(f"approval: {arg}")


@command("/tokens", "tokens per step (model request) and the share of tool results")
def tokens(repl: Repl, arg: str, prompt: Any) -> None:
    from loopagent.cli.repl import tokens_label
    from loopagent.render.lines import clipped

    steps = [t for t in repl.turns if type(t).__name__ == "TurnTokens"]
    tasks = [t for t in repl.turns if type(t).__name__ == "AgentStart"]
    rows: list[tuple[Any, ...]] = []
    for t in repl.turns:  # step numbers start again with each task: a line names the task they belong to
        if type(t).__name__ == "AgentStart":
            if len(tasks) > 1:
                rows.append((f"task {tasks.index(t) + 1}: {' '.join(t.task.split())}",))
        else:
            rows.append((t.step, t.usage.prompt_tokens, t.usage.completion_tokens, f"{t.tool_share:.0%}"))
    if not steps:  # no accounting events: what the server reported per reply
        replies = [m for m in repl.history if isinstance(m, AssistantMessage) and m.usage]
        rows = [(n, m.usage.prompt_tokens, m.usage.completion_tokens, "?") for n, m in enumerate(replies, 1)]
    if not rows:
        repl.renderer.say("no model requests yet")
        return
    repl.renderer.say(f"  {'step':>4} {'prompt':>8} {'completion':>10} {'tool results':>12}", "bold")
    for row in rows:
        if len(row) == 1:
            repl.renderer.say(clipped(f"  ── {row[0]}", repl.renderer.width), "dim")
            continue
        step, p, c, share = row
        repl.renderer.say(f"  {step:>4} {p:>8} {c:>10} {share:>12}")
    counted_rows = [r for r in rows if len(r) > 1]
    total_p, total_c = sum(r[1] for r in counted_rows), sum(r[2] for r in counted_rows)
    used, size = tokens_label(repl.context_used), tokens_label(repl.settings.ctx_size)
    repl.renderer.say(f"  {'all':>4} {total_p:>8} {total_c:>10}   (in use now: {used} of {size})")
    if (usd := repl.agent.steering.price(Usage(total_p, total_c))) is not None:
        from loopagent.prices import shown_cost

        repl.renderer.say(f"  cost: {shown_cost(usd)} at the configured price of {repl.settings.model}")


@command("/compact", "summarise older turns now: /compact [focus]")
def compact(repl: Repl, arg: str, prompt: Any) -> None:
    from contextlib import nullcontext

    from loopagent.cancel import Cancel
    from loopagent.context import Stop

    if service(repl, "context") is None:
        repl.renderer.say("compaction is not available in this build", "yellow")
        return
    try:  # a turn of its own: a spinner, and Ctrl+C stops it like any turn
        with repl.trap.turn() if repl.trap else nullcontext(Cancel()) as cancel:
            event = repl.agent.compact(repl.history, focus=arg, cancel=cancel)
    except Stop as exc:
        repl.renderer.say("compaction cancelled" if exc.status == "aborted" else f"compaction failed: {exc}", "yellow")
        return
    finally:
        repl.renderer.close()
    if event is None:
        repl.renderer.say("nothing to compact yet: the conversation is short")
    # Else the renderer has shown the Compacted event already ("context compacted: A -> B tokens").


@command("/clear", "start a new conversation (a new session)")
def clear(repl: Repl, arg: str, prompt: Any) -> None:
    del repl.history[1:]  # the system prompt stays
    repl.turns.clear()
    repl.context_notes.clear()  # a `!cmd` run for the old conversation is no context for the new one
    history_replaced(repl)
    fork = repl.services.get("fork_session")
    if fork is not None:
        fork(repl)
    repl.renderer.say("new conversation")


@command("/sessions", "list this workspace's sessions")
def sessions(repl: Repl, arg: str, prompt: Any) -> None:
    if (listing := session_service(repl, "sessions")) is None:
        return
    for line in listing(repl.renderer.width):  # one screen row each (the task cut with an ellipsis)
        repl.renderer.say(line)


@command("/checkpoints", "list checkpoints, newest first")
def checkpoints(repl: Repl, arg: str, prompt: Any) -> None:
    store = checkpoint_store(repl)
    if store is None:
        return
    for line in store.lines():
        repl.renderer.say(line)


@command("/undo", "restore the files to the latest checkpoint")
def undo(repl: Repl, arg: str, prompt: Any) -> None:
    if (store := checkpoint_store(repl)) is None:
        return
    restored = restore_in_repl(repl, prompt, store.timeline, "undo")  # asks if the person's changes would go
    if restored:
        tell_model(repl, undone_note(repl, restored))


@command("/redo", "reverse the last undo")
def redo(repl: Repl, arg: str, prompt: Any) -> None:
    if (store := checkpoint_store(repl)) is None:
        return
    if restore_in_repl(repl, prompt, store.timeline, "redo"):
        tell_model(repl, "the user reversed the last undo: the files are back as they were before it, "
                         "with the changes of the calls it had undone.")


@command("/diff", "the change to the files since the session started")
def diff(repl: Repl, arg: str, prompt: Any) -> None:
    from loopagent.render import diff as diffs

    store = checkpoint_store(repl)
    if store is None:
        return
    text = store.diff()
    if not text.strip():
        repl.renderer.say("no changes since the session started")
        return
    repl.renderer.show_diff(text, diffs.summary(text))


@command("/rewind", "go back to an earlier message: conversation, files, or both")
def rewind(repl: Repl, arg: str, prompt: Any) -> None:
    from loopagent.session.typed import typed

    asked = [(i, m) for i, m in enumerate(repl.history) if isinstance(m, UserMessage) and not m.content.startswith(NOTE)]
    if not asked:
        repl.renderer.say("nothing to rewind to yet")
        return
    for n, (_, msg) in enumerate(asked, 1):
        words = typed(msg.content).strip()
        first = words.splitlines()[0] if words else ""
        repl.renderer.say(f"  {n}. {first[:100]}")
    choice = arg or repl.ask(prompt, "rewind to which message? (number, Enter cancels) ")
    if not choice.isdigit() or not 1 <= int(choice) <= len(asked):
        repl.renderer.say("rewind cancelled")
        return
    index, msg = asked[int(choice) - 1]
    store = service(repl, "checkpoints")
    what = "c"
    if store is not None:
        what = repl.ask(prompt, "restore [c]onversation, [f]iles or [b]oth? ").lower()[:1]
        if what not in ("c", "f", "b"):
            repl.renderer.say("rewind cancelled")
            return
    if what in ("f", "b"):
        restored = restore_in_repl(repl, prompt, store.timeline, "rewind", index)
        if restored is False:  # the person kept their files: the conversation stays too
            return
        if restored and what == "f":  # with the conversation rewound too, the calls leave the history
            tell_model(repl, files_note(repl, index, f"message {int(choice)}"))
    if what in ("c", "b"):
        dropped = len(repl.history) - index
        del repl.history[index:]
        history_replaced(repl)
        fork = repl.services.get("fork_session")
        if fork is not None:
            fork(repl)
        repl.renderer.say(f"conversation rewound: {counted(dropped, 'message')} dropped")
    repl.prefill = typed(msg.content)  # what was typed: the notes and attachments came from loop


from loopagent.cli import slash_check  # noqa: E402,F401,I001 - registers /check (a module of its own)
from loopagent.cli import slash_tree  # noqa: E402,F401 - registers /fork and /export

