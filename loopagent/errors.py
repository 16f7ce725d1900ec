"""Every error loop raises on purpose, as one tree; each class carries the run status and exit code.

    LoopError                 status error                   exit 1
    ├── UsageError            status error                   exit 2   a bad flag or argument
    │   └── ConfigError       status error                   exit 2   a bad config value or file
    │       └── PolicyError   status error                   exit 2   a rule that cannot be used
    ├── ModelError            status model_error             exit 1   HTTP error, unreachable server,
    │                                                                 an error inside the stream
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
(events.EXIT_CODES agrees; tests/test_errors_tree.py holds both to this table). The names stay
importable where they were defined before this module existed (loopagent.client,
loopagent.session, loopagent.config, loopagent.cli.run, loopagent.context, loopagent.tools.base).
Signals are not errors: cli.interrupts.Stopped is a BaseException and exits 128 + the signal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

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


class PolicyError(ConfigError):
    """A policy rule cannot be used (an unknown tool, a malformed pattern); the message names it (exit 2)."""


class ModelError(LoopError):
    """The model or its server failed: HTTP errors, unreachable server, an error inside the stream."""

    status = "model_error"


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
