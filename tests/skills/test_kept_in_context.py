"""A loaded skill stays in what the model is sent: never clipped when room is made, and sent again after a
compaction summarised the turn that loaded it (the window's pure parts, with real messages)."""

from __future__ import annotations

from loopagent.context import ContextWindow
from loopagent.context.view import RESENT_HEADER
from loopagent.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolResult, UserMessage

BODY = "\n".join(f"skill step {i}: check the release notes and tag v{i}" for i in range(150))
SKILL = f'<skill name="release" folder=".agents/skills/release">\nFiles:\n(none besides SKILL.md)\n\n{BODY}\n</skill>'


def history(reads: int) -> list[Message]:
    load = ToolCall("c0", "load_skill", '{"name": "release"}')
    out: list[Message] = [SystemMessage("You are loop."), UserMessage("Release it."),
                          AssistantMessage(tool_calls=(load,), stop_reason="tool_calls"),
                          ToolResult("c0", "load_skill", SKILL)]
    for n in range(1, reads + 1):
        call = ToolCall(f"c{n}", "read_file", f'{{"path": "f{n}.py"}}')
        out += [AssistantMessage(tool_calls=(call,), stop_reason="tool_calls"),
                ToolResult(call.id, "read_file", "\n".join(f"f{n} line {i}: total = {i * 3}" for i in range(120)))]
    return out


def test_a_loaded_skill_is_never_clipped_while_other_results_are():
    h = history(6)
    window = ContextWindow(ctx_size=2 * 7000, reserve=7000)  # 8,100 tokens of history: room must be made
    request = window.plan(h, [])
    sent = {m.call_id: m.content for m in request.messages if isinstance(m, ToolResult)}
    assert any("[..." in c or "omitted" in c for k, c in sent.items() if k != "c0"), "the reads should be clipped"
    assert sent["c0"] == SKILL


def test_a_compaction_sends_the_loaded_skill_again():
    h = history(8)
    window = ContextWindow(ctx_size=2 * 3000, reserve=3000)
    step = window.compaction(h)
    assert step is not None and step.start <= 3 < step.upto  # the turn that loaded the skill is summarised
    window.compacted(h, step, AssistantMessage("Loaded the release skill, read f1-f6."))
    after = window.view(h)
    resent = [m for m in after if isinstance(m, UserMessage) and m.content.startswith(RESENT_HEADER)]
    assert len(resent) == 1 and SKILL in resent[0].content
    assert not any(isinstance(m, ToolResult) and m.call_id == "c0" for m in after)  # its turn is gone otherwise
    assert window.view(h)[after.index(resent[0])] is resent[0]  # the same object each time: the prefix stays cached


def test_an_error_or_a_file_read_of_load_skill_is_not_kept():
    call = ToolCall("c0", "load_skill", '{"name": "release", "file": "notes.md"}')
    big = "\n".join(f"note {i}: " + "x" * 60 for i in range(400))
    h: list[Message] = [SystemMessage("s"), UserMessage("t"), AssistantMessage(tool_calls=(call,), stop_reason="tool_calls"),
                        ToolResult("c0", "load_skill", big)]
    request = ContextWindow(ctx_size=2 * 2000, reserve=2000).plan(h, [])
    assert [m for m in request.messages if isinstance(m, ToolResult)][0].content != big
