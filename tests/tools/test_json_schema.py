"""The JSON-schema subset schema-only (MCP) tools are validated against: what passes, what the model reads."""

from __future__ import annotations

import pytest

from loopagent.tools.schema import MAX_PROBLEMS, problems

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 5},
        "count": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "mode": {"enum": ["a", "b", 1]},
        "fixed": {"const": "x"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "maybe": {"type": ["string", "null"]},
        "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        "nested": {"$ref": "#/$defs/Nested"},
        "free": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
    "required": ["name"],
    "additionalProperties": False,
    "$defs": {"Nested": {"type": "object", "properties": {"deep": {"type": "boolean"}}, "required": ["deep"]}},
}


def test_valid_arguments_pass():
    good = {"name": "ab", "count": 9, "ratio": 1, "flag": False, "mode": 1, "fixed": "x", "tags": ["t"],
            "maybe": None, "either": 3, "nested": {"deep": True}, "free": {"k": 2}}
    assert problems(good, SCHEMA) == []
    assert problems({"name": "a", "count": 2.0}, SCHEMA) == []  # JSON has one number type: 2.0 is an integer


@pytest.mark.parametrize(("args", "expected"), [
    ({}, "name: required, missing"),
    ({"name": ""}, "name: must have at least 1 characters"),
    ({"name": "toolong"}, "name: must have at most 5 characters"),
    ({"name": 3}, "name: must be string, not integer"),
    ({"name": "a", "count": True}, "count: must be integer, not boolean"),
    ({"name": "a", "count": 0}, "count: must be >= 1"),
    ({"name": "a", "count": 10}, "count: must be < 10"),
    ({"name": "a", "count": 1.5}, "count: must be integer, not number"),
    ({"name": "a", "mode": True}, "mode: must be one of 'a', 'b', 1"),
    ({"name": "a", "fixed": "y"}, "fixed: must be 'x'"),
    ({"name": "a", "tags": ["a", "b", "c"]}, "tags: must have at most 2 items"),
    ({"name": "a", "tags": [1]}, "tags.0: must be string, not integer"),
    ({"name": "a", "maybe": 1}, "maybe: must be string or null, not integer"),
    ({"name": "a", "either": 1.5}, "either: matches none of the allowed forms"),
    ({"name": "a", "nested": {}}, "nested.deep: required, missing"),
    ({"name": "a", "free": {"k": "v"}}, "free.k: must be integer, not string"),
    ({"name": "a", "extra": 1}, "extra: unexpected argument (allowed: name, count,"),
])
def test_each_problem_is_named_where_it_is(args, expected):
    found = problems(args, SCHEMA)
    assert len(found) == 1 and found[0].startswith(expected), found


def test_hostile_schemas_do_not_crash_or_recurse_forever():
    assert problems({}, {"$ref": "#"}) == ["arguments: the schema nests too deeply to check"]
    assert problems({}, {"$ref": "https://example.com/s.json"})[0].endswith("cannot be resolved")
    assert problems({"a": 1}, {"type": "object", "properties": {"a": False}}) == ["a: no value is allowed here"]
    assert problems({"a": 1}, {"type": "object", "properties": "nonsense", "required": "a"}) == []
    assert problems(1, {"type": "weird"}) == []  # an unknown type keyword checks nothing
    many = {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "string"}}}}
    assert len(problems({"xs": list(range(1000))}, many)) == MAX_PROBLEMS
