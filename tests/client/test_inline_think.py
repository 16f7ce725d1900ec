"""Inline `<think>` blocks (models whose server does not split reasoning out) are thinking everywhere:
not in the answer's text, the `--json` assistant line, the session's text or the next request."""

from __future__ import annotations

import json
from pathlib import Path

from loopagent.client.assemble import TurnAssembler
from tests.fakeserver import text, text_events


def assembled(pieces: list[str]):
    turn = TurnAssembler()
    for chunk in text_events("".join(pieces)):
        list(turn.feed(chunk))
    return turn.finish()


def test_a_think_block_at_the_start_becomes_thinking_and_the_answer_keeps_the_rest():
    msg = assembled(["<think>The user wants", " a count.</think>\n\nThere are 3."])
    assert msg.text == "There are 3." and msg.thinking == "The user wants a count."


def test_a_tag_quoted_in_a_sentence_stays_text():
    msg = assembled(["Models write <think> tags sometimes."])
    assert msg.text == "Models write <think> tags sometimes." and msg.thinking == ""


def test_a_reply_that_is_only_an_unclosed_think_block_is_an_empty_reply():
    import pytest

    from loopagent.errors import IncompleteTurn

    with pytest.raises(IncompleteTurn, match="only thinking"):
        assembled(["<think>still pondering"])


def test_inline_thinking_is_not_sent_back_nor_shown_as_the_answer(run_loop, server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    server.add(text("<think>secret plan</think>\nFirst answer."))
    proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "hi")
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    (assistant,) = [e for e in out if e["type"] == "assistant"]
    assert assistant["text"] == "First answer."
    session = Path(next(e for e in out if e["type"] == "session")["path"])
    server.add(text("Second answer."))
    again = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--resume", str(session), "more")
    assert again.returncode == 0, again.stderr
    sent = [m for m in server.requests[-1]["messages"] if m["role"] == "assistant"]
    assert sent == [{"role": "assistant", "content": "First answer."}]
    records = [json.loads(line) for line in session.read_text().splitlines()]
    assert any(r.get("thinking") == "secret plan" for r in records)
