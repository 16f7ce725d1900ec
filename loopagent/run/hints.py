"""What to do next when a run failed on its server: one line under the error, on stderr.

The client's messages say what happened ("cannot reach URL: ...", "HTTP 401 from URL: ..."); a
hint says what the user can do about it. It names options and variables, never a key's value.
"""

from __future__ import annotations

from loopagent.events import RunEnd

UNREACHABLE = "start a server there, pass --base-url URL, or run `loop doctor` to probe it"
NO_KEY = "the server wants an API key: pass --api-key KEY or set LOOP_API_KEY"
BAD_KEY = "the server refused the API key: check --api-key or LOOP_API_KEY (OPENAI_API_KEY is the fallback)"


def hint_for(end: RunEnd, has_key: bool) -> str:
    """The hint for a run that ended on its server, or "" when there is nothing useful to add."""
    if end.status not in ("model_error", "error"):
        return ""
    if end.message.startswith("cannot reach "):
        return UNREACHABLE
    if end.message.startswith(("HTTP 401 ", "HTTP 403 ")):
        return BAD_KEY if has_key else NO_KEY
    return ""
