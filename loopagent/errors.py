"""Every error loop raises on purpose, as one tree; each class carries the run status and exit code.

    LoopError                 status error                   exit 1
    ├── UsageError            status error                   exit 2   a bad flag or argument
    │   └── ConfigError       status error                   exit 2   a bad config value or file
    │       └── PolicyError   status error                   exit 2   a rule that cannot be used
    ├── ModelError            status model_error             exit 1   HTTP error, an error inside the stream
    │   └── ServerUnavailable status error                   exit 1   unreachable server, refused key
    ├── IncompleteTurn        status incomplete_model_turn   exit 1   cut, idle, oversized, empty,
    │                                                                 filtered or stopped for length
    ├── Cancelled             status aborted                 exit 130 the cancel token was set mid-turn
    ├── SessionError          status error                   exit 1   a session cannot be found or read
    │   └── SessionWriteError status error                   exit 1   a session line cannot be written
    ├── Stop                  status error                   exit 1   a request cannot be sent
    │   ├── ContextFull       status token_limit             exit 3   does not fit even after making room
    │   ├── BudgetSpent       status token_limit             exit 3   --max-tokens-total reached
    │   ├── BrokenHistory     status error                   exit 1   a call without its result
    │   └── CompactionCancelled status aborted               exit 130 cancelled while summarising
    └── ToolError             (never ends a run)                      its text is the error result
                                                                      the model reads

A run that ends on one of these reports `status` in its `result` line and exits `exit_code`
(events.EXIT_CODES agrees; tests/loop/test_error_tree.py holds both to this table). Import them from
here; a package whose callers catch some of them exports those too (loopagent.client,
loopagent.session, loopagent.context, loopagent.tools, loopagent.run.launch).
`ConfigError.invalid` turns one pydantic error into the line a user reads: the setting, what it
must be, the bad value. Signals are not errors: cli.interrupts.Stopped is a BaseException and exits 128 + the signal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from loopagent.messages import AssistantMessage


class LoopError(Exception):
    """The root: a failure loop reports as a run status and a process exit code."""

    status: ClassVar[str] = "error"
    exit_code: ClassVar[int] = 1


class UsageError(LoopError):
    """Invalid command-line input: one line for the user, exit 2."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration value or file is wrong; the message names it (exit 2)."""

    @classmethod
    def invalid(cls, name: str, error: Mapping[str, Any], shown: Any = None) -> ConfigError:
        """One line from one pydantic error: the setting, what is allowed, the bad value (`shown`, if given)."""
        return cls(invalid_value(name, error, shown))


# What a value must be, by pydantic error type; `{...}` take the error's ctx.
ALLOWED = {
    "int_parsing": "a whole number", "int_from_float": "a whole number", "int_type": "a whole number",
    "float_parsing": "a number", "float_type": "a number", "bool_parsing": "true or false",
    "bool_type": "true or false", "string_type": "a string", "list_type": "a list",
    "greater_than_equal": "at least {ge}", "greater_than": "more than {gt}",
    "less_than_equal": "at most {le}", "less_than": "less than {lt}",
}


def invalid_value(name: str, error: Mapping[str, Any], shown: Any = None) -> str:
    """`NAME must be ALLOWED, not VALUE` for one pydantic error dict, in place of pydantic's several lines.

    `shown` replaces the input in the message (a URL without its credentials, a masked key).
    """
    kind, ctx = error.get("type", ""), error.get("ctx") or {}
    value = error.get("input") if shown is None else shown
    got = f", not {value!r}" if value is not None else ""
    if kind in ("literal_error", "enum"):
        choices = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        return f"{name} must be one of {', '.join(choices)}{got}"
    if kind in ALLOWED:
        return f"{name} must be {ALLOWED[kind].format(**{k: _number(v) for k, v in ctx.items()})}{got}"
    text = str(error.get("msg", "is not valid")).removeprefix("Value error, ").removeprefix("Input should be ")
    if text.startswith("must "):  # our validators' wording: "must be an http:// or https:// URL"
        return f"{name} {text}{got}"
    return f"{name}: {text}{got}" if kind != "value_error" else f"{name}: {text}"


def _number(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


class PolicyError(ConfigError):
    """A policy rule cannot be used (an unknown tool, a malformed pattern); the message names it (exit 2)."""


class ModelError(LoopError):
    """The model or its server failed: HTTP errors, unreachable server, an error inside the stream."""

    status = "model_error"


class ServerUnavailable(ModelError):
    """Not the model's fault: the server cannot be reached, or it refused the credentials (HTTP 401/403)."""

    status = "error"


class IncompleteTurn(LoopError):
    """The turn cannot be used: cut, idle, oversized, empty, filtered or stopped for length. No tool may run.

    `partial` holds what arrived before it ended (text and thinking, never tool calls), or None.
    """

    status = "incomplete_model_turn"

    def __init__(self, message: str, partial: AssistantMessage | None = None):
        super().__init__(message)
        self.partial = partial


class Cancelled(LoopError):
    """The cancel signal was set while the turn streamed; `partial` is the text received so far."""

    status = "aborted"
    exit_code = 130

    def __init__(self, partial: AssistantMessage):
        super().__init__("cancelled by the user")
        self.partial = partial


class SessionError(LoopError):
    """A session cannot be found, read or written; the message says which and why (exit 1)."""


class SessionWriteError(SessionError):
    """A session line could not be written; the run must stop (exit 1)."""


class Stop(LoopError):
    """The run cannot go on; `status` is the RunEnd status to report."""


class ContextFull(Stop):
    """Even after making room the request does not fit in the context window (a limit: exit 3)."""

    status = "token_limit"
    exit_code = 3


class BudgetSpent(Stop):
    """The next request would take the run over --max-tokens-total."""

    status = "token_limit"
    exit_code = 3


class BrokenHistory(Stop):
    """A call without its result or a result without its call: never sent to a server."""


class CompactionCancelled(Stop):
    """The cancel token was set while the summary was being written: the turn stops (exit 130)."""

    status = "aborted"
    exit_code = 130


class ToolError(LoopError):
    """An expected failure of a tool; its text becomes the error result the model reads (never ends a run)."""
