"""The final answer as JSON valid against a schema (`--output-schema FILE`, `output_schema` in the user file).

The schema is checked once, at the start of a run, so a bad file is one line and exit 2 before any
request. A final answer is accepted as JSON when it is a JSON document, also when wrapped in one
Markdown code fence (models add one out of habit). When it is not valid the loop asks once more with
`response_format` and no tools (loop.py); llama.cpp, vLLM and Ollama turn that schema into a grammar, so
even a small model's second answer is valid.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopagent.errors import UsageError

FENCE = re.compile(r"\A\s*```[\w+-]*[ \t]*\n(.*?)\n?```\s*\Z", re.S)
MAX_SCHEMA_BYTES = 1_000_000


@dataclass(frozen=True)
class Shaped:
    """A final answer that is valid JSON for the schema: its value (any JSON value, null included)."""

    value: Any


@dataclass(frozen=True)
class Verdict:
    """One answer judged: its value when valid, else why not (one line)."""

    shaped: Shaped | None
    why: str = ""


@dataclass(frozen=True)
class OutputSchema:
    """A JSON Schema the final answer must satisfy, checked as a schema when it was loaded."""

    schema: dict[str, Any]
    source: str = ""  # the file it came from, for messages
    _validator: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, schema: dict[str, Any], source: str = "") -> OutputSchema:
        """The schema, checked against its metaschema; raises UsageError naming what is wrong."""
        from jsonschema import SchemaError, validators

        kind = validators.validator_for(schema)
        try:
            kind.check_schema(schema)
        except SchemaError as exc:
            where = "/".join(map(str, exc.absolute_path)) or "the top level"
            raise UsageError(f"{source or 'the output schema'}: not a valid JSON Schema at {where}: "
                             f"{_line(exc.message)}") from None
        if remote := next((ref for ref in refs(schema) if not ref.startswith("#")), None):
            raise UsageError(f"{source or 'the output schema'}: $ref {_line(ref_shown(remote))} is not in the file; "
                             "loop fetches nothing, so only local references (\"#/...\") work")
        return cls(schema, source, kind(schema))

    def judge(self, text: str) -> Verdict:
        """The answer's JSON value when it is valid against the schema, else why it is not."""
        found = FENCE.match(text)
        body = found.group(1) if found else text
        try:
            value = json.loads(body)
        except ValueError as exc:
            return Verdict(None, f"not JSON ({exc})" if body.strip() else "the answer is empty")
        try:
            error = next(iter(sorted(self._validator.iter_errors(value), key=lambda e: e.path)), None)
        except Exception as exc:  # noqa: BLE001 - a reference the schema cannot resolve, found only now
            return Verdict(None, f"the schema cannot be applied ({_line(str(exc))})")
        if error is not None:
            where = "/".join(map(str, error.absolute_path)) or "the top level"
            return Verdict(None, f"at {where}: {_line(error.message)}")
        return Verdict(Shaped(value))

    def request(self, why: str) -> str:
        """The user message before the second request: what was wrong and what to send."""
        return ("Your final answer must be only a JSON document valid against this JSON Schema, with no "
                f"other text. Your last answer was not ({why}).\nSchema:\n{json.dumps(self.schema)}")

    def response_format(self) -> dict[str, Any]:
        """The schema as chat completions' `response_format` names it (the client writes the wire form)."""
        return {"name": "output", "schema": self.schema, "strict": True}


def load_schema(path: str | Path, label: str = "--output-schema") -> OutputSchema:
    """The schema in the file at `path` (`label`: where it was named); raises UsageError (one line, exit 2)
    when it cannot be used."""
    path = Path(path).expanduser()
    try:
        raw = path.read_bytes()[: MAX_SCHEMA_BYTES + 1]
    except OSError as exc:
        raise UsageError(f"{label} {path}: cannot read it ({exc.strerror or exc})") from None
    if len(raw) > MAX_SCHEMA_BYTES:
        raise UsageError(f"{label} {path}: larger than {MAX_SCHEMA_BYTES // 1_000_000} MB")
    try:
        schema = json.loads(raw)
        if not isinstance(schema, dict):
            raise UsageError(f"{label} {path}: a JSON Schema is an object, like {{\"type\": \"object\"}}")
        return OutputSchema.of(schema, f"{label} {path}")
    except RecursionError:
        raise UsageError(f"{label} {path}: nested too deeply") from None
    except ValueError as exc:
        raise UsageError(f"{label} {path}: not JSON ({_line(str(exc))})") from None


def refs(node: Any) -> list[str]:
    """Every `$ref` string in a schema, however deep."""
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [ref for value in node.values() for ref in refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in refs(value)]
    return []


def ref_shown(ref: str) -> str:
    from loopagent.secrets import public_url

    return public_url(ref) or ref if "://" in ref else ref


def _line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
