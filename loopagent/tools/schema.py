"""Validation of a call's arguments against a JSON schema, for tools that have no pydantic model (MCP).

jsonschema is not a dependency and pydantic only writes JSON schemas, it does not check values
against one; so this checks the subset MCP servers emit (FastMCP/pydantic, zod-to-json-schema):
type (one or a list; integer excludes booleans), properties, required, additionalProperties,
items, enum, const, anyOf/oneOf/allOf, local $ref (#/$defs/..., #/definitions/...), minLength,
maxLength, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minItems, maxItems. Other keywords
(format, pattern, ...) are not checked: the tool's server validates again, this only gives the
model a readable error before a round trip.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 64  # a schema that refers to itself ($ref "#") cannot recurse forever
MAX_PROBLEMS = 10

TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def problems(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """Why `value` does not match `schema`, as `where: what` lines; [] when it matches."""
    out: list[str] = []
    Checker(schema, out).check(value, schema, "", 0)
    return out[:MAX_PROBLEMS]


class Checker:
    def __init__(self, root: Mapping[str, Any], out: list[str]):
        self.root, self.out = root, out

    def fail(self, where: str, what: str) -> None:
        self.out.append(f"{where or 'arguments'}: {what}")

    def check(self, value: Any, schema: Any, where: str, depth: int) -> None:
        if schema is False:
            return self.fail(where, "no value is allowed here")
        if not isinstance(schema, Mapping):  # `true`, or something that is no schema: anything goes
            return
        if depth > MAX_DEPTH:
            return self.fail(where, "the schema nests too deeply to check")
        if "$ref" in schema:
            target = self.resolve(schema["$ref"])
            if target is None:
                return self.fail(where, f"the schema's reference {schema['$ref']!r} cannot be resolved")
            self.check(value, target, where, depth + 1)
        if not self.typed(value, schema, where):
            return
        if "enum" in schema and isinstance(schema["enum"], list) and not any(same(value, e) for e in schema["enum"]):
            self.fail(where, f"must be one of {', '.join(map(repr, schema['enum']))}")
        if "const" in schema and not same(value, schema["const"]):
            self.fail(where, f"must be {schema['const']!r}")
        self.combined(value, schema, where, depth)
        if isinstance(value, dict):
            self.object(value, schema, where, depth)
        elif isinstance(value, list):
            self.array(value, schema, where, depth)
        elif isinstance(value, str):
            self.bounds(len(value), schema, where, "minLength", "maxLength", "characters")
        elif TYPES["number"](value):
            self.number(value, schema, where)

    def typed(self, value: Any, schema: Mapping[str, Any], where: str) -> bool:
        wanted = schema.get("type")
        if wanted is None:
            return True
        names = wanted if isinstance(wanted, list) else [wanted]
        if any(TYPES.get(n, lambda v: True)(value) for n in names if isinstance(n, str)):
            return True
        self.fail(where, f"must be {' or '.join(map(str, names))}, not {kind(value)}")
        return False

    def combined(self, value: Any, schema: Mapping[str, Any], where: str, depth: int) -> None:
        for key in ("anyOf", "oneOf", "allOf"):
            options = schema.get(key)
            if not isinstance(options, list):
                continue
            failures = [problems_of(self.root, value, s, where, depth + 1) for s in options]
            matched = sum(1 for f in failures if not f)
            if key == "allOf":
                for f in failures:
                    self.out.extend(f)
            elif matched == 0:
                self.fail(where, "matches none of the allowed forms: " + " | ".join(f[0] for f in failures if f))
            elif key == "oneOf" and matched > 1:
                self.fail(where, f"matches {matched} of the forms, and must match exactly one")

    def object(self, value: dict, schema: Mapping[str, Any], where: str, depth: int) -> None:
        props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
        for name in schema.get("required", []) if isinstance(schema.get("required"), list) else []:
            if name not in value:
                self.fail(join(where, name), "required, missing")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in props:
                self.check(item, props[name], join(where, name), depth + 1)
            elif extra is False:
                allowed = ", ".join(props) or "none"
                self.fail(join(where, name), f"unexpected argument (allowed: {allowed})")
            elif isinstance(extra, Mapping):
                self.check(item, extra, join(where, name), depth + 1)

    def array(self, value: list, schema: Mapping[str, Any], where: str, depth: int) -> None:
        self.bounds(len(value), schema, where, "minItems", "maxItems", "items")
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                self.check(item, items, join(where, str(i)), depth + 1)
                if len(self.out) >= MAX_PROBLEMS:
                    return

    def number(self, value: float, schema: Mapping[str, Any], where: str) -> None:
        for key, broken, word in (("minimum", value.__lt__, ">="), ("maximum", value.__gt__, "<="),
                                  ("exclusiveMinimum", value.__le__, ">"), ("exclusiveMaximum", value.__ge__, "<")):
            limit = schema.get(key)
            if TYPES["number"](limit) and broken(limit):
                self.fail(where, f"must be {word} {limit}")

    def bounds(self, size: int, schema: Mapping[str, Any], where: str, low: str, high: str, unit: str) -> None:
        if isinstance(schema.get(low), int) and size < schema[low]:
            self.fail(where, f"must have at least {schema[low]} {unit}")
        if isinstance(schema.get(high), int) and size > schema[high]:
            self.fail(where, f"must have at most {schema[high]} {unit}")

    def resolve(self, ref: Any) -> Any:
        """A local reference (`#`, `#/$defs/name`, JSON-pointer escapes); None for anything else."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        node: Any = self.root
        for part in filter(None, ref[1:].split("/")):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node


def problems_of(root: Mapping[str, Any], value: Any, schema: Any, where: str, depth: int) -> list[str]:
    out: list[str] = []
    Checker(root, out).check(value, schema, where, depth)
    return out


def same(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but True is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def kind(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if TYPES[name](value):
            return name
    return type(value).__name__


def join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name
