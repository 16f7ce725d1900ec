"""What an HTTP error status from a model server means: a refused key, a request too long for the
server's context window (and how large that window is, when the server says), or the server's own words.

Several servers say no endpoint's worth of their window (llama-cpp-python reports it nowhere), but
all of them state it when a request is too long: llama.cpp's llama-server in its error object
(`n_ctx`, and in older builds in the message), llama-cpp-python, vLLM and OpenAI in the words
"maximum context length is N tokens", llama-cpp-python's raw error as "exceed context window of N",
LM Studio as "exceeds context length N". Ollama says only that the input does not fit. The text is
the server's, so it is untrusted: a number is believed only within probe.py's sane sizes.
"""

from __future__ import annotations

import re
from typing import Any

from loopagent.client.probe import sane_size
from loopagent.errors import ModelError, ServerUnavailable

STATED = (
    re.compile(r"maximum context length is (\d[\d,]*) tokens", re.I),  # OpenAI, vLLM, llama-cpp-python
    re.compile(r"exceed(?:s|ed)? (?:the )?context window of (\d+)", re.I),  # llama-cpp-python's raw ValueError
    re.compile(r"available context size \((\d+) tokens\)", re.I),  # llama-server before the n_ctx field
    re.compile(r"exceeds context length (\d+)", re.I),  # LM Studio
)
# Words of a refusal for length that names no number (llama-server's newer message, Ollama's).
OVERFLOW = re.compile(r"exceeds? the available context size|context_length_exceeded|exceed_context_size_error"
                      r"|input length exceeds the context length|maximum context length", re.I)
SOURCE = "its HTTP 400 error"  # servers.json's ctx_source for a window learned this way


class WindowExceeded(ModelError):
    """The server refused a request that does not fit its context window; `window` when it said how large."""

    def __init__(self, message: str, window: int | None = None):
        super().__init__(message)
        self.window = window


def stated_window(said: str, body: Any) -> int | None:
    """The window the error states: llama-server's `n_ctx` field, else a number in the message."""
    error = body.get("error") if isinstance(body, dict) else None
    for where in (error, body):
        if isinstance(where, dict) and sane_size(where.get("n_ctx")):
            return sane_size(where.get("n_ctx"))
    for pattern in STATED:
        found = pattern.search(said)
        if found and sane_size(found.group(1).replace(",", "")):
            return sane_size(found.group(1).replace(",", ""))
    return None


def window_error(status: int, said: str, body: Any, heading: str) -> WindowExceeded | None:
    """A WindowExceeded with what to do, when the error is a refusal for length; else None.

    `heading` is the client's own start of the message (`HTTP 400 from URL: ...`)."""
    if status not in (400, 413, 422, 500):
        return None
    window, heading = stated_window(said, body), heading.rstrip(". ")
    if window is None and not OVERFLOW.search(said) and not (isinstance(body, dict) and OVERFLOW.search(str(body))):
        return None
    if window is None:
        return WindowExceeded(f"{heading}; the request does not fit the server's context window: pass --ctx-size "
                              "with the server's window (with Ollama, --provider ollama sets num_ctx itself)")
    return WindowExceeded(f"{heading}; the server's context window is {window:,} tokens: it is kept for this "
                          f"server in servers.json, so the next run uses it (or pass --ctx-size {window})", window)


def refusal(status: int, heading: str, body: Any) -> ModelError:
    """The error for an HTTP error status; `heading` is `HTTP N from URL: what the server said`."""
    if status in (401, 403):  # not the model's fault: the key (status error, run/hints.py says what to do)
        return ServerUnavailable(heading)
    return window_error(status, heading, body, heading) or ModelError(heading)
