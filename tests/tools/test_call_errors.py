"""What the model reads when its call cannot be taken: one clear sentence, no doubled words."""

from __future__ import annotations

from loopagent.messages import ToolCall
from loopagent.tools import Registry, default_tools


def test_arguments_with_a_raw_newline_name_the_problem_once():
    result = Registry(default_tools()).prepare(ToolCall("c1", "list_files", '{"path": "a\nb"}'))
    assert result.is_error
    assert result.content == ("arguments for list_files are not valid JSON (Invalid control character at "
                              "position 11); send a JSON object")
