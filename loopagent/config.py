"""Effective settings: defaults, then LOOP_* environment, then the command line."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field, SecretStr, ValidationError


class ConfigError(Exception):
    """A configuration value or file is wrong; the message names it (exit 2)."""


class Settings(BaseModel):
    base_url: str = "http://127.0.0.1:8080/v1"
    model: str = "default"
    api_key: SecretStr | None = None
    approval: str = "edits"
    max_steps: int = Field(30, ge=1)
    ctx_size: int = Field(16384, ge=256)
    max_tokens: int = Field(4096, ge=1)
    retries: int = Field(4, ge=0)
    connect_timeout: float = Field(10.0, gt=0)
    read_timeout: float = Field(300.0, gt=0)
    shell_timeout: float = Field(120.0, gt=0)
    checkpoints: bool = True
    env_allow: list[str] = Field(default_factory=list)


ENV_KEYS = {name: f"LOOP_{name.upper()}" for name in Settings.model_fields}


def loop_home(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get("LOOP_HOME") or Path.home() / ".loop")


def load_settings(workspace: Path, cli: dict, environ: dict[str, str] | None = None) -> Settings:
    """Merge the sources, weakest first; `cli` holds only the flags the user gave."""
    env = os.environ if environ is None else environ
    values: dict = {}
    for name, var in ENV_KEYS.items():
        if env.get(var):
            values[name] = env[var]
    if "api_key" not in values and env.get("OPENAI_API_KEY"):
        values["api_key"] = env["OPENAI_API_KEY"]
    values.update({k: v for k, v in cli.items() if v is not None})
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"invalid setting {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
