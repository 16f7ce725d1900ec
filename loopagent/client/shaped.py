"""A turn whose reply the server shapes to a JSON Schema (`response_format`), for `--output-schema`.

llama.cpp, vLLM and Ollama turn the schema into a grammar, so even a small model emits valid JSON.
Servers that do not know the field either ignore it (loop still checks the answer) or answer HTTP 400;
those are told once, and the request goes again without it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from loopagent.errors import ModelError, ServerUnavailable
from loopagent.events import Event, Notice

if TYPE_CHECKING:
    from loopagent.cancel import Cancel
    from loopagent.client.openai import OpenAIClient
    from loopagent.messages import AssistantMessage, Message

# How a refusal of `response_format` starts (the client's own heading of an HTTP error; 422: FastAPI's servers).
REFUSED_FORMAT = re.compile(r"HTTP (?:400|422) ")
# Servers (provider, URL, model) that refused it in this process: not asked again, not told again (the REPL).
refused: set[str] = set()


def shaped(client: Any, schema: dict[str, Any]) -> Any:
    """`client` for requests whose reply the server must shape to `schema` ({"name", "schema", "strict"}),
    sharing its connection; a client that cannot send a schema (a replay) is returned as it is."""
    if not hasattr(client, "schema") or client.server_key in refused:
        return client
    other = copy.copy(client)
    other.schema = schema
    return other


def complete_shaped(client: OpenAIClient, messages: Sequence[Message], emit: Callable[[Event], None],
                    cancel: Cancel) -> AssistantMessage:
    """A turn without tools under `client.schema`; without it once the server refused it (said once)."""
    from loopagent.client.refusal import WindowExceeded

    try:
        return client.send(messages, [], emit, cancel, schema=client.schema)
    except ModelError as exc:
        if isinstance(exc, (WindowExceeded, ServerUnavailable)) or not REFUSED_FORMAT.match(str(exc)):
            raise
        emit(Notice("warning", f"{client.shown} refused response_format ({str(exc)[:200]}); asked again without "
                               "it, so the answer is only checked against the schema, not shaped by the server"))
        client.schema = None
        refused.add(client.server_key)
        return client.send(messages, [], emit, cancel)
