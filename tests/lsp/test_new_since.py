"""What an edit broke: hand-made diagnostics before and after, compared by message and moved position;
the block the model reads; diagnostics a server sends malformed."""

from __future__ import annotations

from loopagent.lsp.diagnostics import ERROR, WARNING, Diagnostic, block, line_map, new_since, parse

OLD = "import os\n\ndef f():\n    return x\n"


def err(line: int, col: int, message: str, severity: int = ERROR) -> Diagnostic:
    return Diagnostic(line, col, severity, message)


def test_lines_the_edit_left_alone_move_changed_ones_map_nowhere():
    moved = line_map("a\nb\nc\nd", "new\na\nB\nc\nd")
    assert [moved(i) for i in range(4)] == [1, None, 3, 4]


def test_an_error_that_stood_before_and_moved_with_the_edit_is_old():
    before = [err(3, 11, "undefined name 'x'")]
    new = "# a comment\n# another\n" + OLD
    assert new_since(before, [err(5, 11, "undefined name 'x'")], OLD, new) == []


def test_a_new_error_an_error_on_a_changed_line_and_one_at_a_new_place_are_new():
    before = [err(3, 11, "undefined name 'x'")]
    new = "import os\n\ndef f():\n    return x + y\n\nx2 = x\n"
    after = [err(3, 11, "undefined name 'x'"), err(3, 15, "undefined name 'y'"), err(5, 5, "undefined name 'x'")]
    # line 3 changed: what is on it now is new, even the message it had before
    assert new_since(before, after, OLD, new) == after


def test_same_message_elsewhere_or_other_text_at_the_same_place_is_new():
    before = [err(3, 11, "undefined name 'x'")]
    assert new_since(before, [err(3, 12, "undefined name 'x'")], OLD, OLD) == [err(3, 12, "undefined name 'x'")]
    assert new_since(before, [err(3, 11, "undefined name 'z'")], OLD, OLD) == [err(3, 11, "undefined name 'z'")]


def test_identical_diagnostics_count_one_for_one():
    before = [err(0, 0, "dup")]
    assert new_since(before, [err(0, 0, "dup"), err(0, 0, "dup")], "a\n", "a\n") == [err(0, 0, "dup")]


def test_warnings_only_when_asked_and_hints_never():
    after = [err(0, 0, "unused import", WARNING), err(0, 1, "hint", 4), err(1, 0, "broken")]
    assert new_since([], after, "", "a\nb\n") == [err(1, 0, "broken")]
    assert new_since([], after, "", "a\nb\n", warnings=True) == [err(0, 0, "unused import", WARNING), err(1, 0, "broken")]


def test_the_block_is_one_based_counts_both_kinds_and_clips_at_twenty_lines():
    found = [err(11, 4, '"x" is not defined'), err(2, 0, "unused\n  import", WARNING)]
    assert block("calc.py", found) == ('1 new error, 1 new warning:\ncalc.py:12:5 "x" is not defined\n'
                                       "calc.py:3:1 warning: unused import")
    many = block("m.py", [err(i, 0, f"e{i}") for i in range(30)])
    lines = many.split("\n")
    assert len(lines) == 20 and lines[0] == "30 new errors:" and lines[-1] == "[... 12 more not shown]"
    assert lines[-2] == "m.py:18:1 e17"
    assert block("m.py", []) == ""
    assert len(block("m.py", [err(0, 0, "w" * 5000)])) < 300


def test_malformed_diagnostics_are_skipped_the_good_ones_kept():
    good = {"range": {"start": {"line": 1, "character": 2}}, "message": "m", "severity": 1, "source": "pyflakes"}
    items = [good, {"message": "no range"}, {"range": {"start": {"line": -1, "character": 0}}, "message": "m"},
             {"range": {"start": {"line": True, "character": 0}}, "message": "m"}, "text", None,
             {"range": {"start": {"line": 0, "character": 0}}, "message": 5},
             {"range": {"start": {"line": 0, "character": 0}}, "message": "sev", "severity": 9},
             {"range": {"start": {"line": 3, "character": 0}}, "message": "no severity is an error"}]
    assert parse(items) == [Diagnostic(1, 2, ERROR, "m", "pyflakes"), err(3, 0, "no severity is an error")]
    assert parse({"not": "a list"}) == [] and parse(None) == []
