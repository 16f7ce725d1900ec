"""The context window's edits follow the messages they were made for, not their places in the history,
so a history cut (/rewind) or cleared (/clear) and grown again needs no reset()."""

from __future__ import annotations

import json

from loopagent.context import SUMMARY_HEADER, Compaction, ContextWindow, Request, messages_tokens
from loopagent.events import Compacted
from loopagent.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)

SYSTEM = SystemMessage("You are loop.")
TASK = UserMessage("Fix the rounding bug in ledger.py.")


def planned(window: ContextWindow, history: list[Message]) -> list[Message]:
    """The messages of the next request, which must fit without a compaction."""
    request = window.plan(history, [])
    assert isinstance(request, Request), request
    return request.messages


def turn(call_id: str, name: str, args: dict, content: str) -> list[Message]:
    call = ToolCall(call_id, name, json.dumps(args))
    return [AssistantMessage(tool_calls=(call,), stop_reason="tool_calls"), ToolResult(call_id, name, content)]


def lines(tag: str, n: int) -> str:
    return "\n".join(f"{i:>6}\t{tag} line {i}: value = compute({i}, rate) + offset" for i in range(n))


def tool_contents(messages: list[Message]) -> list[str]:
    return [m.content for m in messages if isinstance(m, ToolResult)]


def tight(history: list[Message]) -> ContextWindow:
    """A window whose limit is 80% of the history's full size: room has to be made."""
    return ContextWindow(ctx_size=2 * int(messages_tokens(history) * 0.8), reserve=1 << 20)


def test_a_stub_does_not_pass_to_the_message_that_takes_its_place_after_a_rewind():
    history = [SYSTEM, TASK, *turn("c1", "read_file", {"path": "a.py"}, lines("a", 120)),
               *turn("c2", "read_file", {"path": "a.py"}, lines("a", 120))]
    window = tight(history)
    assert tool_contents(planned(window, history))[0].startswith("[superseded: a.py")
    del history[2:]  # /rewind to the task: no reset() call
    history += turn("c1", "read_file", {"path": "b.py"}, lines("b", 20))  # index 3 again, another message
    assert tool_contents(planned(window, history)) == [lines("b", 20)]


def test_equal_results_in_two_turns_are_edited_apart():
    same = "exit code 1\n" + lines("pytest", 200)
    history = [SYSTEM, TASK, *turn("call_0_shell", "shell", {"command": "pytest"}, same),
               *turn("call_0_shell", "shell", {"command": "pytest"}, same)]
    assert history[3] == history[5] and history[3] is not history[5]  # equal values, two messages
    shown = tool_contents(planned(tight(history), history))
    assert shown[0].startswith("[superseded: this command ran again later")
    assert shown[1].startswith("exit code 1\n     0\tpytest line 0:")  # the newest run's output is no stub


def compacted_history() -> tuple[list[Message], ContextWindow, Compacted]:
    history: list[Message] = [SYSTEM, TASK]
    for n in range(8):
        history += turn(f"c{n}", "read_file", {"path": f"f{n}.py"}, lines(f"f{n}", 12))
    history += [AssistantMessage("Done?"), UserMessage("Also check f7.py.")]
    history += turn("c9", "read_file", {"path": "f7.py", "offset": 3}, lines("f7", 5))
    window = ContextWindow(ctx_size=2 * (messages_tokens(history) - 200), reserve=1 << 20)
    step = window.plan(history, [])  # the loop asks the model for this summary as a turn of its own
    assert isinstance(step, Compaction)
    event = window.compacted(history, step, AssistantMessage(text="Read the f files; nothing changed yet.",
                                                             usage=Usage(300, 20)))
    return history, window, event


def has_summary(messages: list[Message]) -> bool:
    return any(isinstance(m, UserMessage) and m.content.startswith(SUMMARY_HEADER) for m in messages)


def test_clear_forgets_the_summary_without_a_reset():
    history, window, _ = compacted_history()
    assert has_summary(window.view(history))
    del history[1:]  # /clear keeps the system prompt
    history.append(UserMessage("A new task."))
    assert window.view(history) == [SYSTEM, UserMessage("A new task.")]
    assert window.summary == "" and window.upto == 0


def test_a_rewind_past_the_summary_drops_it_and_one_after_it_keeps_it():
    history, window, event = compacted_history()
    kept = list(history)
    del history[-2:]  # rewind after what the summary covers: the summary still stands for those turns
    view = window.view(history)
    assert has_summary(view) and view[-1] is history[-1] and window.upto == event.upto
    del history[event.upto - 1:]  # rewind into what it covers: it would summarise turns that are gone
    history.append(UserMessage("Try again."))
    assert window.view(history) == history
    assert len(history) < len(kept)


def test_a_restored_summary_binds_to_the_history_it_is_first_viewed_with():
    history, window, event = compacted_history()
    resumed = ContextWindow(ctx_size=window.ctx_size, reserve=window.reserve)
    resumed.restore(event)
    assert resumed.view(history) == window.view(history)
    history.append(AssistantMessage("Fixed."))
    assert resumed.view(history)[-1] is history[-1] and has_summary(resumed.view(history))
    del history[2:]  # a cut before the restored boundary forgets it, with no reset()
    assert resumed.view(history) == history


def test_edits_of_messages_that_are_gone_are_freed_when_room_is_made_again():
    history = [SYSTEM, TASK, *turn("c1", "read_file", {"path": "a.py"}, lines("a", 120)),
               *turn("c2", "shell", {"command": "make"}, lines("make", 120)),
               *turn("c3", "read_file", {"path": "a.py"}, lines("a", 120))]
    window = tight(history)
    planned(window, history)
    assert len(window.view_state.stubs) == 1 and len(window.view_state.clips) == 1
    del history[2:]
    for n in range(3):
        history += turn(f"d{n}", "shell", {"command": f"make {n}"}, lines(f"make{n}", 120))
    planned(window, history)
    live = {id(m) for m in history}
    assert all(id(m) in live for m in window.view_state.clips) and len(window.view_state.stubs) == 0


def test_reset_still_forgets_everything_for_callers_that_use_it():
    history, window, _ = compacted_history()
    window.reset()
    assert not has_summary(window.view(history)) and len(window.view_state.stubs) == 0
