"""The REPL's slash commands about the conversation, the model, the session and the files (the table: commands.py);
/init and /edit, about what the person sends, are in slash_prompt.py."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from loopagent.cancel import Cancel
from loopagent.cli.repl.recap import NOTE
from loopagent.cli.repl.restore import files_note, restore_in_repl, tell_model, undone_note
from loopagent.counts import counted
from loopagent.messages import AssistantMessage, Usage, UserMessage
from loopagent.render.safe import printable

if TYPE_CHECKING:
    from loopagent.cli.repl.state import ReplState

T = TypeVar("T")


def tokens_label(n: int) -> str:
    """12345 -> 12.3k; a power-of-two window such as 16384 -> 16k."""
    if n < 1000:
        return str(n)
    if n % 1024 == 0:
        return f"{n // 1024}k"
    return f"{n / 1000:.1f}k"


def offered(repl: ReplState, part: T | None) -> T | None:
    """A part of the session file's services (`repl.services`), or None after saying there is none."""
    if part is None:
        repl.renderer.say("sessions are not available in this build", "yellow")
    return part


def history_replaced(repl: ReplState) -> None:
    """After /clear or /rewind the toolbar's estimate starts over; the context window's edits are keyed
    by message identity, so those of messages that left the history are gone with them."""
    from loopagent.context import messages_tokens

    repl.context_used = messages_tokens(repl.history)


def checkpoint_store(repl: ReplState) -> Any:
    """The checkpoint store, or None after telling the user that checkpoints are off."""
    store = repl.services.checkpoints
    if store is None:
        repl.renderer.say("checkpoints are off", "yellow")
    return store


def leave(repl: ReplState, arg: str, prompt: Any) -> int:
    return 0


def model(repl: ReplState, arg: str, prompt: Any) -> None:
    if not arg:
        repl.renderer.say(f"model: {repl.settings.model}")
        return
    client = repl.agent.model
    if hasattr(client, "model"):
        client.model = arg
    repl.settings = repl.settings.model_copy(update={"model": arg})
    repl.renderer.say(f"model: {arg}")


def approval(repl: ReplState, arg: str, prompt: Any) -> None:
    policy = repl.agent.policy
    if not arg:
        repl.renderer.say(f"approval: {policy.mode}")
        return
    # the one place the mode lives: the toolbar, the shell's sandbox and every later call read it
    if why := policy.switch(arg):
        repl.renderer.say(f"error: {why}", "red")
        return
    repl.renderer.say(f"approval: {arg}")


def tokens(repl: ReplState, arg: str, prompt: Any) -> None:
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


def compact(repl: ReplState, arg: str, prompt: Any) -> None:
    from contextlib import nullcontext

    from loopagent.cancel import Cancel
    from loopagent.context import Stop

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


def clear(repl: ReplState, arg: str, prompt: Any) -> None:
    del repl.history[1:]  # the system prompt stays
    repl.turns.clear()
    repl.context_notes.clear()  # a `!cmd` run for the old conversation is no context for the new one
    history_replaced(repl)
    if (fork := repl.services.fork_session) is not None:
        fork(repl.history)
    repl.renderer.say("new conversation")


def sessions(repl: ReplState, arg: str, prompt: Any) -> None:
    if (listing := offered(repl, repl.services.sessions)) is None:
        return
    for line in listing(repl.renderer.width):  # one screen row each (the task cut with an ellipsis)
        repl.renderer.say(line)


def checkpoints(repl: ReplState, arg: str, prompt: Any) -> None:
    store = checkpoint_store(repl)
    if store is None:
        return
    for line in store.lines():
        repl.renderer.say(line)


def undo(repl: ReplState, arg: str, prompt: Any) -> None:
    if (store := checkpoint_store(repl)) is None:
        return
    restored = restore_in_repl(repl, prompt, store.timeline, "undo")  # asks if the person's changes would go
    if restored:
        tell_model(repl, undone_note(repl, restored))


def redo(repl: ReplState, arg: str, prompt: Any) -> None:
    if (store := checkpoint_store(repl)) is None:
        return
    if restore_in_repl(repl, prompt, store.timeline, "redo"):
        tell_model(repl, "the user reversed the last undo: the files are back as they were before it, "
                         "with the changes of the calls it had undone.")


def diff(repl: ReplState, arg: str, prompt: Any) -> None:
    from loopagent.render import diff as diffs

    store = checkpoint_store(repl)
    if store is None:
        return
    text = store.diff()
    if not text.strip():
        repl.renderer.say("no changes since the session started")
        return
    repl.renderer.show_diff(text, diffs.summary(text))


def rewind(repl: ReplState, arg: str, prompt: Any) -> None:
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
    store = repl.services.checkpoints
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
        if (fork := repl.services.fork_session) is not None:
            fork(repl.history)
        repl.renderer.say(f"conversation rewound: {counted(dropped, 'message')} dropped")
    repl.prefill = typed(msg.content)  # what was typed: the notes and attachments came from loop


def run_check(repl: ReplState, arg: str, prompt: Any) -> None:
    """/check [CMD]: the completion check now, outside any turn, exactly as after an answer (check.py: the
    run's sandbox, env and redactor); without CMD the configured one. Ctrl+C stops it; the outcome is shown
    and written to the session, and the model is not asked anything."""
    from loopagent.check import Check

    cmd = arg or repl.settings.check
    if not cmd:
        repl.renderer.say("no check configured: start loop with --check CMD, or type /check CMD", "yellow")
        return
    check = Check(cmd, repl.agent.tools, repl.settings.check_timeout)
    with repl.trap.turn() if repl.trap else nullcontext(Cancel()) as cancel:
        ran = check(cancel, 1)
    repl.agent.emit(ran)  # the renderer shows it, the session file records it


def fork(repl: ReplState, arg: str, prompt: Any) -> None:
    start, current = offered(repl, repl.services.fork_session), repl.services.session_path
    if start is None or current is None:
        return
    before = current().stem
    start(repl.history)  # a new file with the same messages, its header naming `before` and the last message
    after = current().stem
    repl.renderer.say(f"forked: now in {after}; {before} is kept (`loop agent --resume {before}` continues it)")


def export(repl: ReplState, arg: str, prompt: Any) -> None:
    from loopagent.config import loop_home
    from loopagent.errors import SessionError
    from loopagent.export import export as render
    from loopagent.export import format_for, write_whole

    if (current := offered(repl, repl.services.session_path)) is None:
        return
    path: Path = current()
    # Without a name, beside the sessions rather than in the repository: a transcript is not the project's.
    target = Path(arg).expanduser() if arg else loop_home() / "exports" / f"{path.stem}.md"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_whole(target, render(path, format_for(None, target)))
    except (OSError, SessionError) as exc:
        why = exc.strerror.lower() if isinstance(exc, OSError) and exc.strerror else str(exc)
        repl.renderer.say(f"cannot write {printable(str(target))}: {printable(why)}", "red")
        return
    repl.renderer.say(f"wrote {printable(str(target))}")
