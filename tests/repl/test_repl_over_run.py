"""The REPL is a caller of its open run (run/run.py `Run`): its turns are `run.turn`, with the REPL's own agent
(its questions pause the type-ahead, it observes the feed) and the message it sends with `@` attachments, and
they land in the run's session. In process: the real run, session file, REPL and renderer, a local model."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import httpx

from loopagent.run.build import Host
from loopagent.run.run import open_run
from loopagent.run.spec import Flags, RunSpec
from tests.fakeserver import text_events


def test_the_repls_turns_are_its_runs_and_reach_its_session(tmp_path: Path, monkeypatch):
    from loopagent.cli.repl.repl import Repl
    from loopagent.cli.repl.typeahead import PausingApprover

    sent = []

    def model(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content)["messages"][-1]["content"])
        body = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in text_events("it says hello"))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body + b"data: [DONE]\n\n")

    devnull = open(os.devnull)  # the REPL's type-ahead needs a real file descriptor on stdin
    monkeypatch.setattr(sys, "stdin", devnull)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("canary-line\n")
    host = Host(env={"PATH": "/usr/bin:/bin"}, home=tmp_path / "home", cwd=ws, stdin_tty=True, stdout_tty=True,
                out=io.StringIO(), err=io.StringIO(), transport=httpx.MockTransport(model))
    spec = RunSpec(task=None, workspace=ws, flags=Flags(sandbox="off", checkpoints=False, ctx_size=16384))
    try:
        with open_run(spec, host, prompt=True) as run:
            built = run.agent
            repl = Repl(run.agent, run.history, run.settings, run.renderer, services=run.services(), opened=run)
            assert run.agent is repl.agent is not built  # the run's turns run the REPL's variant from now on
            assert isinstance(run.agent.steering.approver, PausingApprover) and repl.observe in run.agent.listeners
            end = repl.turn("what does @a.txt say?")
            path = run.rec.path
    finally:
        devnull.close()
    assert end.status == "completed" and repl.context_used > 0  # the REPL observed the run's feed
    assert "canary-line" in sent[0] and sent[0].startswith("what does @a.txt say?")  # the attachment was sent
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    said = [m.get("content", m.get("text")) for m in lines if m.get("type") == "message" and m.get("role") in ("user", "assistant")]
    assert said[0] == sent[0] and said[1] == "it says hello"
