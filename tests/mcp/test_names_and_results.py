"""MCP names and results as the model sees them: `mcp__SERVER__TOOL` within the wire's rules, content blocks as text."""

from __future__ import annotations

import base64
import subprocess
import sys

from mcp import types

from loopagent.mcp.tools import result_of, tool_name
from loopagent.tools.spec import NAME


def test_names_are_sanitised_bounded_and_unique():
    assert tool_name("git hub", "list.repos", set()) == "mcp__git_hub__list_repos"
    long = tool_name("server", "x" * 100, set())
    assert len(long) == 64 and NAME.fullmatch(long)
    taken = {"mcp__a_b__c"}
    other = tool_name("a.b", "c", taken)  # sanitises onto a taken name: a hash suffix
    assert other != "mcp__a_b__c" and other.startswith("mcp__a_b__c_") and NAME.fullmatch(other)
    assert tool_name("a.b", "c", taken) == other  # stable across runs (rules and sessions name it)


def test_blocks_map_to_text_images_to_a_note_and_is_error_to_an_error():
    png = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()
    answer = types.CallToolResult(content=[
        types.TextContent(type="text", text="hello"),
        types.ImageContent(type="image", data=png, mimeType="image/png"),
        types.ResourceLink(type="resource_link", uri="file:///x.txt", name="x"),
    ])
    result = result_of(answer)
    assert not result.is_error
    assert result.content == "hello\n[image image/png, 100 bytes]\nfile:///x.txt"
    failed = result_of(types.CallToolResult(content=[types.TextContent(type="text", text="bad")], isError=True))
    assert failed.is_error and failed.content == "bad"


def test_structured_content_is_json_when_there_is_no_text():
    answer = types.CallToolResult(content=[], structuredContent={"n": 3})
    assert result_of(answer).content == '{"n": 3}'
    with_text = types.CallToolResult(content=[types.TextContent(type="text", text="3")], structuredContent={"n": 3})
    assert result_of(with_text).content == "3"


def test_a_run_without_servers_does_not_import_the_sdk():
    code = ("import sys; from loopagent.config import load_config; from pathlib import Path; "
            "load_config(Path('.'), {}, {'LOOP_HOME': '/nonexistent'}); import loopagent.run.build; "
            "print('mcp' in sys.modules, 'anyio' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "False"]
