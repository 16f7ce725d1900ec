"""`loop doctor`'s question about schemas: does the server shape a reply to `response_format`?

One tiny request whose schema a model would not meet by chance (an object with a made-up enum value),
after a prompt that asks for something else: a reply valid against it means the server enforced it.
"""

from __future__ import annotations

from typing import Any

PROMPT = "Reply with the single word: ok"
SCHEMA = {"type": "object", "properties": {"answer": {"enum": ["mauve-7"]}}, "required": ["answer"],
          "additionalProperties": False}
ROW = "schema enforced"


def schema_row(client: Any, asked: bool) -> tuple[str, str, str]:
    """(check, answer, detail) for doctor's table; `asked`: the plain text request worked (else not worth it)."""
    from loopagent.cancel import Cancel
    from loopagent.client.shaped import REFUSED_FORMAT, shaped
    from loopagent.errors import IncompleteTurn, ModelError
    from loopagent.messages import UserMessage
    from loopagent.output.schema import OutputSchema

    if not asked:
        return ROW, "-", "not asked: plain text failed"
    schema = OutputSchema.of(SCHEMA)
    if (probe := shaped(client, schema.response_format())) is client:
        return ROW, "-", "not asked: this client sends no response_format"
    try:
        reply = probe.send([UserMessage(PROMPT)], [], lambda event: None, Cancel(), schema=probe.schema)
    except (ModelError, IncompleteTurn) as exc:
        said = client.clean(str(exc))[:160]
        if REFUSED_FORMAT.match(said):
            return ROW, "no", f"refused ({said}); --output-schema only checks the answer"
        return ROW, "unknown", said
    if schema.judge(reply.text).shaped is not None:
        return ROW, "yes", "response_format json_schema shapes the reply (--output-schema is reliable)"
    return ROW, "no", "response_format ignored; --output-schema only checks the answer"
