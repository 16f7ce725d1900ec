"""The approval mode of a replayed session someone handed over: never looser than the user's own."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from loopagent.cli.replay_mode import mode_for


def handed(recorded: str, approval: str | None = None) -> SimpleNamespace:
    loaded = SimpleNamespace(header={"approval": recorded}, path=Path("/tmp/x.jsonl"))
    return SimpleNamespace(loaded=loaded, own=False, approval=approval)


@pytest.mark.parametrize(("recorded", "configured", "runs"), [
    ("all", "plan", "plan"), ("all", "ask", "ask"), ("edits", "ask", "ask"),  # looser than yours: yours
    ("plan", "edits", "plan"), ("ask", "all", "ask"), ("edits", "edits", "edits"),  # as strict or stricter
])
def test_a_handed_over_session_runs_under_the_stricter_mode(recorded, configured, runs):
    mode, note = mode_for(handed(recorded), configured)
    assert mode == runs
    assert (note != "") == (runs != recorded)  # a note says when the recorded mode was not used


def test_your_own_session_and_an_explicit_approval_run_as_given():
    own = handed("all")
    own.own = True
    assert mode_for(own, "plan") == ("all", "")
    assert mode_for(handed("all", approval="edits"), "plan") == ("edits", "")
