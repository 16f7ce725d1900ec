"""Tool calls that a model wrote into its text instead of `tool_calls`. Pure: text in, calls out.

Small local models behind chat templates that the server does not parse emit their calls as
text. The forms recognised are the common templates' own:

    <tool_call>{"name": "read_file", "arguments": {...}}</tool_call>      Qwen, Hermes
    <function=read_file>{"path": "a.py"}</function>                        Llama 3.x
    [TOOL_CALLS][{"name": "read_file", "arguments": {...}}]                Mistral
    [TOOL_CALLS]read_file[ARGS]{"path": "a.py"}                            Mistral (newer templates)
    {"name": "read_file", "arguments": {...}}                              a reply that is only that

The tagged forms are unambiguous, so prose around them is allowed (and kept as the turn's text);
a bare JSON object counts only when it is the whole reply (a code fence around it is allowed).
Every call must name a known tool and carry an object of arguments (as an object or as JSON
text), else nothing is recovered: text that mentions a tool, or calls an unknown one, stays text.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace

from loopagent.messages import AssistantMessage, ToolCall

_DECODER = json.JSONDecoder()
TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.S)
FUNCTION = re.compile(r"<function=([A-Za-z0-9_.-]+)>\s*(.*?)\s*(?:</function>|\Z)", re.S)
MISTRAL = "[TOOL_CALLS]"
MISTRAL_ARGS = re.compile(r"\s*([A-Za-z0-9_.-]+)\s*\[ARGS\]")
FENCE = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\Z", re.S)


@dataclass(frozen=True)
class TextCalls:
    """The calls found (name, arguments as JSON text) and the prose around them."""

    calls: tuple[tuple[str, str], ...]
    prose: str


def find_text_calls(text: str, known: Iterable[str]) -> TextCalls | None:
    """The tool calls written in `text`, or None when it holds no call of a known tool in a known form."""
    names = set(known)
    if not names or not text.strip():
        return None
    for form in (_tagged_tool_calls, _tagged_functions, _mistral, _bare):
        found = form(text)
        if found is None:
            continue
        calls, prose = found
        checked = [_checked(name, args, names) for name, args in calls]
        if not calls or any(c is None for c in checked):
            return None  # a form was used but a call is broken or unknown: leave the text alone
        return TextCalls(tuple(c for c in checked if c is not None), prose.strip())
    return None


def _checked(name: object, args: object, names: set[str]) -> tuple[str, str] | None:
    """(name, arguments JSON) when `name` is a known tool and `args` an object (or JSON text of one)."""
    if not isinstance(name, str) or name not in names:
        return None
    if args is None:
        args = {}
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return None
    if not isinstance(args, dict):
        return None
    return name, json.dumps(args, ensure_ascii=False)


def _object_call(obj: object) -> tuple[object, object] | None:
    """A {"name", "arguments"} object (Llama 3.1's JSON form says "parameters") as (name, arguments)."""
    if not isinstance(obj, dict) or "name" not in obj:
        return None
    if set(obj) - {"name", "arguments", "parameters", "id", "type"}:
        return None  # some other JSON that happens to have a name
    return obj["name"], obj.get("arguments", obj.get("parameters"))


def _loads(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _tagged_tool_calls(text: str) -> tuple[list, str] | None:
    matches = list(TOOL_CALL.finditer(text))
    if not matches:
        return None
    calls = [_object_call(_loads(m.group(1))) for m in matches]
    return [c if c is not None else (None, None) for c in calls], TOOL_CALL.sub("", text)


def _tagged_functions(text: str) -> tuple[list, str] | None:
    matches = list(FUNCTION.finditer(text))
    if not matches:
        return None
    # The arguments stay text: _checked parses them, and broken JSON fails the call.
    return [(m.group(1), m.group(2)) for m in matches], FUNCTION.sub("", text)


def _mistral(text: str) -> tuple[list, str] | None:
    start = text.find(MISTRAL)
    if start < 0:
        return None
    prose, rest = text[:start], text[start + len(MISTRAL):]
    calls: list = []
    while rest.strip():
        named = MISTRAL_ARGS.match(rest)
        if named:  # name[ARGS]{...}
            try:
                args, end = _DECODER.raw_decode(rest, named.end())
            except ValueError:
                return [(None, None)], prose
            calls.append((named.group(1), args))
        else:  # [{"name":..., "arguments":...}, ...]
            try:
                value, end = _DECODER.raw_decode(rest.lstrip())
            except ValueError:
                return [(None, None)], prose
            end += len(rest) - len(rest.lstrip())
            items = value if isinstance(value, list) else [value]
            calls += [_object_call(item) or (None, None) for item in items]
        rest = rest[end:]
        if rest.lstrip().startswith(MISTRAL):
            rest = rest.lstrip()[len(MISTRAL):]
        elif rest.strip():
            return [(None, None)], prose  # something after the calls that is not another call
    return calls, prose


def _bare(text: str) -> tuple[list, str] | None:
    body = text.strip()
    fenced = FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    if not body.startswith(("{", "[")):
        return None
    value = _loads(body)
    items = value if isinstance(value, list) and value else [value]
    calls = [_object_call(item) for item in items]
    if any(c is None for c in calls):
        return None  # JSON, but not calls: an answer that happens to be JSON
    return calls, ""


def tool_names(tools: Iterable[object]) -> list[str]:
    """The names of the tools offered (specs, or dicts in wire form)."""
    names = []
    for tool in tools:
        if isinstance(tool, dict):
            fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
            name = fn.get("name")
        else:
            name = getattr(tool, "name", None)
        if isinstance(name, str):
            names.append(name)
    return names


def recovered(message: AssistantMessage, tools: Iterable[object]) -> AssistantMessage | None:
    """`message` with the calls written in its text as real tool calls, or None when it has none.

    The recovered calls get ids starting `call_recovered_`, which the session keeps; the text
    keeps only the prose around them, so the model is not shown each call twice.
    """
    if message.tool_calls or message.stop_reason != "stop":
        return None
    found = find_text_calls(message.text, tool_names(tools))
    if found is None:
        return None
    calls = tuple(ToolCall(f"call_recovered_{uuid.uuid4().hex[:16]}", name, args) for name, args in found.calls)
    return replace(message, text=found.prose, tool_calls=calls, stop_reason="tool_calls", recovered=True)
