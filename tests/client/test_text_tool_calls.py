"""Tool calls written into the text: the pure parser (loopagent/client/textcalls.py), form by form."""

from __future__ import annotations

import json

import pytest

from loopagent.client.textcalls import find_text_calls, recovered, tool_names
from loopagent.messages import AssistantMessage

KNOWN = ["read_file", "list_files", "grep", "write_file", "edit_file", "shell"]


def calls(text: str) -> list[tuple[str, dict]] | None:
    found = find_text_calls(text, KNOWN)
    return None if found is None else [(name, json.loads(args)) for name, args in found.calls]


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}</tool_call>',
    '<tool_call>\n{"name": "read_file", "arguments": "{\\"path\\": \\"a.py\\"}"}\n</tool_call>',  # arguments as JSON text
    '<tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}',  # the closing tag never came
    '<function=read_file>{"path": "a.py"}</function>',
    '<function=read_file>\n{"path": "a.py"}\n</function>',
    '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a.py"}}]',
    '[TOOL_CALLS]read_file[ARGS]{"path": "a.py"}',
    '{"name": "read_file", "arguments": {"path": "a.py"}}',
    '  {"name": "read_file", "parameters": {"path": "a.py"}}\n',  # Llama 3.1's JSON form
    '```json\n{"name": "read_file", "arguments": {"path": "a.py"}}\n```',
])
def test_each_form_gives_the_call(text):
    assert calls(text) == [("read_file", {"path": "a.py"})]


def test_several_calls_in_one_reply_keep_their_order():
    text = ('<tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}</tool_call>\n'
            '<tool_call>{"name": "grep", "arguments": {"pattern": "def "}}</tool_call>')
    assert calls(text) == [("read_file", {"path": "a.py"}), ("grep", {"pattern": "def "})]
    mistral = '[TOOL_CALLS][{"name": "list_files", "arguments": {}}, {"name": "shell", "arguments": {"command": "ls"}}]'
    assert calls(mistral) == [("list_files", {}), ("shell", {"command": "ls"})]
    newer = '[TOOL_CALLS]read_file[ARGS]{"path": "a"}[TOOL_CALLS]read_file[ARGS]{"path": "b"}'
    assert calls(newer) == [("read_file", {"path": "a"}), ("read_file", {"path": "b"})]
    bare_list = '[{"name": "read_file", "arguments": {"path": "a"}}, {"name": "list_files", "arguments": {}}]'
    assert calls(bare_list) == [("read_file", {"path": "a"}), ("list_files", {})]


def test_prose_around_a_tagged_call_is_kept_as_the_text():
    found = find_text_calls('Let me look at the file.\n<tool_call>{"name": "read_file", "arguments": '
                            '{"path": "a.py"}}</tool_call>\nThen I will explain.', KNOWN)
    assert found is not None and found.prose == "Let me look at the file.\n\nThen I will explain."
    found = find_text_calls('I will read it. <function=read_file>{"path": "a.py"}</function>', KNOWN)
    assert found is not None and found.prose == "I will read it." and len(found.calls) == 1


@pytest.mark.parametrize("text", [
    "I would use read_file to look at timeparse.py.",  # a mention
    "Call read_file with {\"path\": \"a.py\"} to see it.",
    'Here is the JSON: {"name": "read_file", "arguments": {"path": "a.py"}}',  # bare JSON inside prose
    '{"name": "delete_everything", "arguments": {}}',  # an unknown tool
    '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',
    '<function=nuke>{}</function>',
    '<tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}</tool_call>'
    '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',  # one unknown call: none is taken
    '<tool_call>not json</tool_call>',
    '<tool_call>{"name": "read_file", "arguments": [1, 2]}</tool_call>',  # arguments not an object
    '<function=read_file>{"path": </function>',
    '{"name": "read_file", "arguments": {"path": "a.py"}, "explanation": "x"}',  # other JSON with a name
    '{"name": "Ada", "age": 3}',
    '[TOOL_CALLS] nothing useful',
    '[1, 2, 3]',
    "",
])
def test_what_is_not_a_call_of_a_known_tool_is_left_alone(text):
    assert calls(text) is None


def test_no_known_tools_means_nothing_is_recovered():
    assert find_text_calls('{"name": "read_file", "arguments": {}}', []) is None


def test_recovered_turns_the_message_into_a_normal_tool_call_turn():
    message = AssistantMessage(text='Reading.\n<tool_call>{"name": "read_file", "arguments": {"path": "t.py"}}'
                                    '</tool_call>')
    specs = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    assert tool_names(specs) == ["read_file"]
    out = recovered(message, specs)
    assert out is not None and out.stop_reason == "tool_calls" and out.text == "Reading."
    (call,) = out.tool_calls
    assert call.name == "read_file" and json.loads(call.arguments) == {"path": "t.py"}
    assert call.id.startswith("call_recovered_")
    # A turn that already has calls, or was not a normal end, is not touched.
    assert recovered(out, specs) is None
    assert recovered(AssistantMessage(text=message.text, stop_reason="interrupted"), specs) is None
