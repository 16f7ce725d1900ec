"""In-process pieces of the check and the time limit: the Check command (real subprocesses), the
feedback the model reads, the Deadline, and the loop's statuses around them (ScriptedModel)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from loopagent.cancel import Cancel, Deadline
from loopagent.check import TAIL_CHARS, Check, feedback, tail
from loopagent.events import CheckRan, RunEnd
from loopagent.loop import Agent, Limits, Steering
from loopagent.messages import UserMessage
from loopagent.policy import Policy
from loopagent.scripted import ScriptedModel, call, calls
from loopagent.tools import Registry, ToolContext, default_tools
from loopagent.tools.workspace import Workspace


def context(ws: Path, **kw) -> ToolContext:
    return ToolContext(Workspace(ws), env={"PATH": "/usr/bin:/bin"}, **kw)


def test_a_check_reports_exit_code_and_the_tail_of_its_output_with_secrets_redacted(tmp_path):
    ctx = context(tmp_path, redact=lambda s: s.replace("s3cret", "[redacted]"))
    ran = Check("seq 1 5000; echo token=s3cret; exit 3", ctx)(Cancel(), attempt=2)
    assert (ran.passed, ran.exit_code, ran.attempt, ran.timed_out) == (False, 3, 2, False)
    assert ran.output.endswith("5000\ntoken=[redacted]") and "s3cret" not in ran.output
    assert len(ran.output) < TAIL_CHARS + 100 and ran.output.startswith("[... ")  # the end is what is kept
    assert feedback(ran).startswith("The check `seq 1 5000; echo token=s3cret; exit 3` failed with exit 3: [... ")
    assert Check("true", ctx)(Cancel()).passed


def test_a_cancelled_check_stops_at_once(tmp_path):
    cancel = Cancel()
    cancel.set()
    ran = Check("sleep 30", context(tmp_path))(cancel)
    assert not ran.passed and ran.exit_code is None and ran.seconds < 5


def test_tail_cuts_at_a_line_start():
    assert tail("short\n") == "short"
    cut = tail("\n".join(f"line {n}" for n in range(1000)), limit=50)
    assert cut.splitlines()[1].startswith("line ") and cut.endswith("line 999")


def test_the_deadline_passes_by_its_clock_and_sets_the_token_with_status_time_limit():
    now = [100.0]
    cancel = Cancel()
    deadline = Deadline(0.05, cancel, clock=lambda: now[0])
    assert not deadline.passed()
    now[0] = 100.05
    assert deadline.passed()
    assert cancel.wait(5) and cancel.status == "time_limit" and "0.05 s" in cancel.reason
    unlimited = Deadline(None, Cancel())
    assert not unlimited.passed() and unlimited._timer is None
    stopped = Cancel()
    Deadline(0.01, stopped).stop()
    assert not stopped.wait(0.1)  # a stopped deadline cancels nothing


def agent(ws: Path, model, seen: list, **limits) -> Agent:
    return Agent(model=model, registry=Registry(default_tools()), tools=context(ws), policy=Policy("all"),
                 listeners=(seen.append,), limits=Limits(max_steps=6, max_nudges=0, **limits))


def test_a_deadline_during_a_tool_ends_the_run_time_limit_not_aborted(tmp_path):
    seen: list = []
    model = ScriptedModel([calls(call("shell", {"command": "sleep 20"})), "never asked"])
    begun = time.monotonic()
    end = agent(tmp_path, model, seen, time_limit=0.3).run([UserMessage("go")], "go", Cancel())
    assert end.status == "time_limit" and end.exit_code == 3 and time.monotonic() - begun < 5
    assert model.served == 1


def test_the_check_goes_back_to_the_model_until_the_retries_are_spent(tmp_path):
    seen: list = []
    checks = iter([False, False, True])
    a = agent(tmp_path, ScriptedModel(["one", "two", "three"]), seen, check_retries=1)
    a = replace(a, steering=Steering(check=lambda cancel, attempt: CheckRan("make test", next(checks), 1, attempt,
                                                                    "FAILED x")))
    history = [UserMessage("go")]
    end = a.run(history, "go", Cancel())
    assert end.status == "check_failed" and end.exit_code == 5 and end.check.attempt == 2
    assert [m.content for m in history if isinstance(m, UserMessage)][1].startswith(
        "The check `make test` failed with exit 1: FAILED x")
    assert [e.attempt for e in seen if isinstance(e, CheckRan)] == [1, 2]
    assert isinstance(seen[-1], RunEnd)
