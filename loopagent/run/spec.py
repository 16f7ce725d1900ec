"""What a run is asked to do: the task, the workspace and the flags given on the command line, typed.

A flag left out is None here and takes its value from the environment, the project file, the user
file or the default (config.py records which, as a fact, in `Config.origins`); the context size's
origin, once resolved, is a `discovery.Window`. Nothing about a run travels as an untyped dict.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Flags:
    """The settings given as flags (None: not given). Names are the settings' names (config.py)."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never shown
    approval: str | None = None
    max_steps: int | None = None
    ctx_size: int | str | None = None  # a number of tokens or "auto"
    max_tokens_total: int | None = None
    checkpoints: bool | None = None
    sandbox: str | None = None
    sandbox_network: bool | None = None
    network_allow: list[str] | None = None  # --allow-host HOST, repeatable: added to the user file's
    provider: str | None = None
    mcp_servers: dict[str, Any] | None = None  # from --mcp-config FILE
    check: str | None = None
    check_retries: int | None = None
    timeout: float | None = None
    output_schema: str | None = None  # --output-schema FILE
    lsp: bool | None = None  # --no-lsp: False

    def given(self) -> dict[str, Any]:
        """The flags the user gave, by setting name: the command line's layer of the configuration."""
        return {f.name: value for f in fields(self) if (value := getattr(self, f.name)) is not None}


@dataclass(frozen=True)
class RunSpec:
    """One run: its task (None: the REPL, or a resume), workspace, flags and how it is shown."""

    task: str | None
    workspace: Path
    flags: Flags = field(default_factory=Flags)
    json: bool = False
    resume: str | None = None  # --resume SESSION
    replay: Path | None = None  # model turns from a recording instead of a server
    extra_env: dict[str, str] = field(default_factory=dict)
    show_thinking: bool = False
    fork: str | None = None  # --fork SESSION[:N]: a new session from SESSION's first N messages
    record: bool = True  # False: no session file or checkpoints, nothing under $LOOP_HOME (loop replay's run)
