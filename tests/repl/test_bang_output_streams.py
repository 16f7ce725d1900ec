"""Review of `!cmd`: output without newlines (a binary, a progress bar) reaches the screen in pieces
as it comes, never gathered whole: memory stays bounded and the prompt comes back promptly (a few
megabytes of it had held the REPL for tens of seconds, the unsplit line re-copied per chunk)."""

from __future__ import annotations

from loopagent.cli.repl.bang import LINE_PIECE, Shown


def test_a_line_without_end_is_shown_in_bounded_pieces():
    said: list[str] = []
    shown = Shown(said.append)
    for _ in range(80):
        shown.add(b"y" * 65536)
    assert len(shown.partial) < LINE_PIECE
    assert said and max(map(len, said)) <= LINE_PIECE  # shown while running, before the end
    shown.add(b"tail\nnext")
    shown.flush()
    assert "".join(said[:-1]).endswith("tail") and said[-1] == "next"
    assert sum(map(len, said)) == 80 * 65536 + len("tailnext")


def test_a_redrawn_progress_line_shows_its_last_state():
    said: list[str] = []
    shown = Shown(said.append)
    shown.add(b"Receiving 10%\rReceiving 55%\rReceiving 100%, done.\r\nnext\r\n")
    assert said == ["Receiving 100%, done.", "next"]  # not "10%\\r55%\\r..." escaped on one line


def test_megabytes_without_newlines_on_a_pty(terminal, server):
    t = terminal(wait_prompt=True)
    t.child.searchwindowsize = 4000  # pexpect itself must not rescan megabytes per read
    t.line("!head -c 3000000 /dev/zero; echo; echo end-marker")
    t.expect(r"\nend-marker", timeout=30)  # the output, not the echo; before the fix: about a minute
    t.expect("go with your next message", timeout=30)
    t.prompt()
    t.child.sendcontrol("d")
    assert t.exit_code() == 0
