"""The run inside `loop replay`: the recorded turns through the real agent on a copy, then the verdicts."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from loopagent.messages import Message, ToolCall, UserMessage
from loopagent.rerun import compare, conclusion, outcomes, refused, table


class RecordedAnswers:
    """The approver of a replay: each question answered as the person answered it in the recording
    (a call refused then is refused now; any other call that reached a question was approved)."""

    def __init__(self, refused: list[ToolCall]):
        self.refused = refused  # the recording's own call objects: the replay's turns hand out the same ones

    def approve(self, call: ToolCall, subject: str, preview: str, decision, cancel) -> bool:
        """True unless this call was refused in the recording."""
        return not any(call is no for no in self.refused)


def rerun(source, copy: Path, strict: bool, host) -> int:
    """Run `source`'s turns on `copy`, print the table of calls and the verdict; the exit code."""
    from loopagent.cli.replay_mode import Refused, mode_for, sink
    from loopagent.errors import ConfigError, UsageError
    from loopagent.render.safe import printable
    from loopagent.run.build import configure
    from loopagent.run.spec import Flags, RunSpec

    loaded = source.loaded
    recorded: list[Message] = list(loaded.history)  # a call cut off by a kill has no result: not judged
    start = next(i for i, m in enumerate(recorded) if isinstance(m, UserMessage)) + 1
    # no MCP server: its tools act outside the copy (a real repository, a ticket system), and a replay
    # must change nothing but the copy; their calls are answered "unknown tool" and shown "not replayed"
    # nothing recorded: the user's sessions and checkpoints stay as they were
    opts = RunSpec(task=recorded[start - 1].content, workspace=copy, flags=Flags(checkpoints=False, mcp_servers={}),
                   json=True, replay=loaded.path, record=False)
    inside = replace(host, cwd=copy, out=sink())
    try:
        mode, note = mode_for(source, configure(opts, inside).settings.approval)
        if mode:
            opts = replace(opts, flags=replace(opts.flags, approval=mode))
        # someone else's "yes" at a question is no answer for this user: what asks is denied
        answers = source.own and not headless_recording(recorded)
        history, status = drive(opts, recorded, start, loaded, inside, answers)
    except (UsageError, ConfigError) as exc:
        raise Refused(str(exc)) from None
    if note:
        print(printable(note), file=host.err)
    roots = (str(loaded.header.get("workspace", "")), str(copy), os.path.realpath(copy))
    verdicts = compare(outcomes(recorded), outcomes(history), strict, roots)
    out = host.out
    if mode is None:
        print("loop: the session recorded no approval mode; the configuration's applies", file=host.err)
    for line in table(verdicts):
        print(printable(line), file=out)
    print(printable(conclusion(verdicts)), file=out)
    if status == "aborted":
        return 130
    return 0 if all(v.same for v in verdicts) else 1


def drive(opts, recorded: list[Message], start: int, loaded, host, answers: bool) -> tuple[list[Message], str]:
    """The replay's history and how its last run ended: one agent run per user message of the recording."""
    from loopagent.client.replay import SessionTurns
    from loopagent.run.interrupts import Trap
    from loopagent.run.run import open_run

    # the model: the very call objects of `recorded` (RecordedAnswers knows them); the approver None: the
    # recorded run could not ask (what needed approval was denied, as now), or it is not the user's
    with open_run(opts, host, model=SessionTurns.of(loaded),
                  answers=RecordedAnswers(refused(recorded)) if answers else None) as run:
        for message in recorded[:start]:
            run.add(message)
        status = "completed"
        with Trap() as trap:
            task = opts.task
            while True:
                with trap.turn() as cancel:
                    status = run.answer(task, cancel).status
                following = recorded[len(run.history)] if len(run.history) < len(recorded) else None
                if status == "aborted" or not isinstance(following, UserMessage) or not turns_left(run.agent):
                    return run.history, status
                run.add(following)  # the next thing the person typed
                task = following.content


def headless_recording(recorded: list[Message]) -> bool:
    """Whether the recorded run had no one to ask (a call was denied for that)."""
    from loopagent.loop import HEADLESS_DENIAL
    from loopagent.messages import ToolResult

    return any(isinstance(m, ToolResult) and m.content.startswith(HEADLESS_DENIAL) for m in recorded)


def turns_left(agent) -> bool:
    model = agent.model
    return getattr(model, "position", 0) < len(getattr(model, "turns", ()))
