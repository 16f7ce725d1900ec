"""Effective settings from layered sources, each value remembering where it came from.

Weakest first: defaults, user file $LOOP_HOME/config.json, project file
<workspace>/.loop/config.json, LOOP_* environment, command line. The project
file arrives with a repository that may be hostile, so it may only tighten:
a stricter approval mode, more deny rules, lower limits. Anything else it sets
is ignored with a warning. `allow`, `deny` and `env_allow` add up across the
layers instead of replacing each other.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from loopagent.errors import ConfigError
from loopagent.policy import Rule
from loopagent.project import USER_ONLY, drop_user_only, shown_value, tighten_only


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="forbid", env_prefix="LOOP_")

    base_url: str = "http://127.0.0.1:8080/v1"
    model: str = "default"
    api_key: SecretStr | None = None
    approval: Literal["ask", "edits", "all", "plan"] = "edits"
    max_steps: int = Field(30, ge=1)
    max_tokens_total: int | None = Field(None, ge=1)  # prompt + completion budget of a run
    # "auto": asked from the server at the start of a run (run/discovery.py), else 16384
    ctx_size: int | Literal["auto"] = "auto"
    max_tokens: int = Field(4096, ge=1)
    retries: int = Field(4, ge=0)
    connect_timeout: float = Field(10.0, gt=0)
    read_timeout: float = Field(300.0, gt=0)
    # Before the first token a slow local server may process a long prompt for minutes, sending only
    # keep-alives: a longer deadline for that wait alone (0: read_timeout applies from the start).
    first_token_timeout: float = Field(0.0, ge=0)
    shell_timeout: float = Field(120.0, gt=0)
    checkpoints: bool = True
    checkpoint_max_bytes: int = Field(5_000_000, ge=0)  # larger files are left out of checkpoints
    checkpoint_lock_wait: float = Field(60.0, ge=0)  # seconds a snapshot waits for another run's snapshot
    env_allow: list[str] = Field(default_factory=list)
    allow: list[str] = Field(default_factory=list)  # shell command globs ("pytest *") or tool(path glob)
    deny: list[str] = Field(default_factory=list)
    instructions_max_bytes: int = Field(32 * 1024, ge=0)  # AGENTS.md text in the system prompt
    sandbox: Literal["workspace-write", "read-only", "off"] = "workspace-write"  # where shell commands may write
    sandbox_network: bool = False  # sandboxed commands may use the network
    sandbox_writable: list[str] = Field(default_factory=list)  # more writable dirs (user file, env, flags)
    # Network by host (loopagent/sandbox/hosts.py, proxy.py): without sandbox_network, sandboxed commands
    # reach these hosts (presets pypi, npm, debian, github) through loop's proxy; deny wins.
    network_allow: list[str] = Field(default_factory=list)  # a project file's only narrows (intersection)
    network_deny: list[str] = Field(default_factory=list)
    network_hosts: str | None = None  # a hosts(5) file the proxy reads before DNS (a local mirror)
    stream_tools: bool | None = None  # stream requests with tools; unset: learned per server (servers.json)
    recover_text_calls: bool = True  # a tool call written into the reply's text becomes a tool call
    temperature: float | None = Field(None, ge=0)  # sent only when set
    top_p: float | None = Field(None, gt=0, le=1)  # sent only when set
    provider: Literal["openai", "ollama"] = "openai"  # ollama: its native /api/chat (sets num_ctx)
    # {"MODEL": {"input": USD, "output": USD}} per million tokens: the run's cost (loopagent/prices.py)
    prices: dict[str, dict[str, float]] = Field(default_factory=dict)
    # {"NAME": {"command", "args", "env", ...}}: user file or --mcp-config only (USER_ONLY), loopagent/mcp/
    mcp_servers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # After a final answer: the command that decides whether the task is done (not from a project file)
    check: str | None = None
    check_retries: int = Field(2, ge=0)  # how often a failing check's output goes back to the model
    check_timeout: float = Field(600.0, gt=0)
    timeout: float | None = Field(None, gt=0)  # wall-clock seconds of a run (status time_limit)
    # Output for programs (loopagent/output/, loopagent/telemetry/): not from a project file (project.py
    # ignores keys it does not name), so a repository can neither change a script's exit code nor turn
    # telemetry on or point it anywhere.
    output_schema: str | None = None  # a JSON Schema file the final answer must be valid against (exit 6)
    telemetry: bool = False  # OpenTelemetry spans and metrics (loopagent[otel]); also on with OTEL_EXPORTER_OTLP_ENDPOINT
    telemetry_content: bool = False  # prompts, answers and tool text in span attributes
    # Language-server diagnostics after edits (loopagent/lsp/): false, true (known servers on PATH), or
    # {"python"|".py": {"command": [...]}|false}; a project file may only turn it off (project.py)
    lsp: bool | dict[str, Any] = True
    lsp_timeout: float = Field(5.0, gt=0)  # seconds an edit waits for the server's diagnostics
    lsp_warnings: bool = False  # new warnings too, not only new errors

    @field_validator("lsp", mode="before")
    @classmethod
    def _lsp(cls, value: Any) -> Any:
        from loopagent.lsp.servers import check_lsp

        return check_lsp(value)

    @field_validator("mcp_servers", mode="before")
    @classmethod
    def _mcp_servers(cls, value: Any) -> Any:
        from loopagent.mcp.settings import check_servers

        return check_servers(value)

    # {"pre_tool"|"post_tool"|"stop"|"session_start": [{"match", "command", "timeout", "on_error"}]}: user
    # file only (USER_ONLY in loopagent/project.py), loopagent/hooks.py
    hooks: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)

    @field_validator("hooks", mode="before")
    @classmethod
    def _hooks(cls, value: Any) -> Any:
        from loopagent.hooks import check_hooks

        return check_hooks(value)

    @field_validator("network_allow", "network_deny")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        from loopagent.sandbox.hosts import parse

        for text in value:
            parse(text)  # ValueError names the entry
        return value

    @field_validator("network_hosts")
    @classmethod
    def _hosts_file(cls, value: str | None) -> str | None:
        if value is not None and not os.path.isfile(value):
            raise ValueError(f"{value!r} is no file (give a hosts(5) file: ADDRESS NAME per line)")
        return value

    @field_validator("prices", mode="before")
    @classmethod
    def _prices(cls, value: Any) -> Any:
        from loopagent.prices import check_prices

        return check_prices(value)

    @field_validator("ctx_size", mode="before")
    @classmethod
    def _ctx_size(cls, value: Any) -> Any:
        # "auto" in any case, or a whole number of at least 256 (also as a string: LOOP_CTX_SIZE=8192)
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, int) and not isinstance(value, bool) and value < 256:
            raise ValueError("must be at least 256")  # or "auto": --help says so
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        # Checked up front: a URL without scheme or host otherwise fails deep inside the client, per request.
        from urllib.parse import urlsplit

        try:
            ok = urlsplit(url).scheme in ("http", "https") and bool(urlsplit(url).hostname)
        except ValueError:
            ok = False
        if not ok:
            raise ValueError("must be an http:// or https:// URL with a host (like http://127.0.0.1:8080/v1)")
        return url

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):
        # load_config() layers the sources itself so that every value keeps its source.
        return (init_settings,)


ENV_KEYS = {name: f"LOOP_{name.upper()}" for name in Settings.model_fields}
ENV_VAR_KEYS = {var: name for name, var in ENV_KEYS.items()}
USER_ONLY_VARS = frozenset(ENV_KEYS[name] for name in USER_ONLY)
OLLAMA_URL = "http://127.0.0.1:11434"  # the base URL when provider is ollama and none is given
RULE_LISTS = ("allow", "deny")
ADDITIVE = ("allow", "deny", "env_allow", "network_allow", "network_deny")
FLAG_NAMES = {"network_allow": "--allow-host"}  # flags not named after their setting
NARROWED = ("network_allow",)  # a project file's replaces the lists below it by their intersection

def loop_home(environ: Mapping[str, str] | None = None) -> Path:
    """$LOOP_HOME, default ~/.loop."""
    env = os.environ if environ is None else environ
    return Path(env.get("LOOP_HOME") or Path.home() / ".loop")


class JsonFileSource(PydanticBaseSettingsSource):
    """One config.json: its values, and the line each key and each rule string sits on."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path, label: str):
        super().__init__(settings_cls)
        self.path, self.label = path, label
        self.text = ""
        self.values: dict[str, Any] = {}
        if path.is_file():
            self.text = read_text(path)
            self.values = self.decode()

    def decode(self) -> dict[str, Any]:
        try:
            data = json.loads(self.text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{self.path} line {exc.lineno}: {exc.msg} (column {exc.colno})") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{self.path} line 1: the file must hold a JSON object like {{\"model\": \"...\"}}")
        return data

    def get_field_value(self, field, field_name: str) -> tuple[Any, str, bool]:
        return self.values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self.values)

    def line_of(self, key: str) -> int:
        m = re.search(rf'"{re.escape(key)}"\s*:', self.text)
        return self.text.count("\n", 0, m.start()) + 1 if m else 1

    def lines_of_items(self, key: str, items: list[str]) -> list[int]:
        """The line of each string in the list under `key`, in order."""
        pos = self.text.find(f'"{key}"')
        lines = []
        for item in items:
            found = self.text.find(json.dumps(item, ensure_ascii=False), max(pos, 0))
            if found >= 0:
                pos = found + 1
            lines.append(self.text.count("\n", 0, found) + 1 if found >= 0 else self.line_of(key))
        return lines

    def where(self, key: str) -> str:
        return f"{self.label} line {self.line_of(key)}"


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it ({exc})") from None


class EnvSource(EnvSettingsSource):
    """LOOP_* variables from a given mapping (the process environment by default)."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]):
        self.environ = environ
        super().__init__(settings_cls, env_prefix="LOOP_", env_ignore_empty=True)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        # USER_ONLY settings are not read from the environment (load_config warns about them)
        return {k.lower(): v for k, v in self.environ.items() if v != "" and k not in USER_ONLY_VARS}

    def __call__(self) -> dict[str, Any]:
        try:
            values = super().__call__()
        except SettingsError as exc:
            name = re.search(r'field "(\w+)"', str(exc))
            var = ENV_KEYS.get(name.group(1), "a LOOP_ variable") if name else "a LOOP_ variable"
            raise ConfigError(f"{var}: not valid JSON; give a list like [\"pytest *\"]") from None
        if "api_key" not in values and self.environ.get("OPENAI_API_KEY"):
            values["api_key"] = self.environ["OPENAI_API_KEY"]
        return values

    def origin(self, key: str) -> str:
        if key == "api_key" and not self.environ.get("LOOP_API_KEY"):
            return "env OPENAI_API_KEY"
        return f"env {ENV_KEYS[key]}"


@dataclass
class Config:
    """The effective settings, where each value came from, the rules, and warnings for stderr."""

    settings: Settings
    sources: dict[str, str] = field(default_factory=dict)
    # the kind of each source as a fact (flag, env, project, user), for code that must know: `sources` is for people
    origins: dict[str, str] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def load_settings(workspace: Path, cli: dict, environ: Mapping[str, str] | None = None) -> Settings:
    """Merge the sources, weakest first; `cli` holds only the flags the user gave."""
    return load_config(workspace, cli, environ).settings


def load_config(workspace: Path, cli: dict, environ: Mapping[str, str] | None = None) -> Config:
    """Every source, layered with its origin; raises ConfigError naming the file and line.

    `environ` defaults to the environment loop started with, secrets included (see secrets.py).
    """
    from loopagent.secrets import HIDDEN_OPTIONS, environment

    env = environment() if environ is None else environ
    # --api-key and a credentialed --base-url were taken out of argv by the re-exec; still command line.
    cli = {**{key: env[opt] for opt, key in HIDDEN_OPTIONS.items() if env.get(opt)},
           **{k: v for k, v in cli.items() if v is not None}}
    user = JsonFileSource(Settings, loop_home(env) / "config.json", f"user file {loop_home(env) / 'config.json'}")
    project = JsonFileSource(Settings, workspace / ".loop" / "config.json",
                             f"project file {workspace / '.loop' / 'config.json'}")
    env_source = EnvSource(Settings, env)
    values: dict[str, Any] = {}
    config = Config(Settings(), {name: "default" for name in Settings.model_fields})

    validate_file(user)
    layer(config, values, user(), user.where, user, "user")
    drop_user_only(project.values, project.where, config.warnings)
    validate_file(project)
    allowed = tighten_only(project.values, project.where, Settings(**values), config.warnings)
    layer(config, values, allowed, project.where, project, "project")
    env_values = env_source()
    drop_user_only({ENV_VAR_KEYS[v]: env[v] for v in USER_ONLY_VARS if env.get(v)}, env_source.origin,
                   config.warnings)
    validate(env_values, lambda key: env_source.origin(key))
    layer(config, values, env_values, env_source.origin, None, "env")
    cli = {k: v for k, v in cli.items() if v is not None}
    validate(cli, lambda key: FLAG_NAMES.get(key, f"--{key.replace('_', '-')}"))
    layer(config, values, cli, lambda key: "command line", None, "flag")
    force_plan(config, values, allowed)
    if values.get("provider") == "ollama" and "base_url" not in values:  # Ollama's port, not llama.cpp's
        values["base_url"] = OLLAMA_URL
        config.sources["base_url"] = "default for provider ollama"
    config.settings = Settings(**values)
    return config


def force_plan(config: Config, values: dict[str, Any], project: dict[str, Any]) -> None:
    """Plan mode (DESIGN "Modes, plans and delegation"): a project file that sets it is not loosened by
    the environment or a flag; they are ignored with a warning."""
    if project.get("approval") != "plan" or values.get("approval") == "plan":
        return
    config.warnings.append(f'ignored approval {values["approval"]} ({config.sources["approval"]}): the project '
                           "file sets approval plan, which nothing may loosen")
    values["approval"] = "plan"
    config.origins["approval"], config.sources["approval"] = "project", "project file (forced)"


def layer(config: Config, values: dict[str, Any], new: dict[str, Any], origin, source: JsonFileSource | None,
          kind: str) -> None:
    """Put one source's values over the weaker ones; additive lists add up."""
    for key, value in new.items():
        config.origins[key] = kind
        if key in ADDITIVE and not (kind == "project" and key in NARROWED):
            values[key] = list(values.get(key, [])) + [v for v in value if v not in values.get(key, [])]
            prior = config.sources[key]
            config.sources[key] = origin(key) if prior == "default" else f"{prior}; {origin(key)}"
        else:
            values[key] = value
            config.sources[key] = origin(key)
        if key in RULE_LISTS:
            lines = source.lines_of_items(key, value) if source else [None] * len(value)
            config.rules += [
                Rule(key, text, f"{source.label} line {line}" if source else origin(key))
                for text, line in zip(value, lines, strict=True)
            ]


def validate_file(source: JsonFileSource) -> None:
    validate(source.values, lambda key: f"{source.path} line {source.line_of(key)}")


def validate(values: dict[str, Any], where) -> None:
    """Check one layer alone, so an error names the layer (file and line, variable, or flag)."""
    try:
        Settings(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else ""
        if err["type"] == "extra_forbidden":
            raise ConfigError(f"{where(key)}: unknown setting {key!r}") from None
        name = where(key) if where(key).startswith("--") else f"{where(key)}: {key}"
        shown = "***" if key == "api_key" else err.get("input")
        if key == "base_url" and isinstance(shown, str):  # keys hide in a URL's user:password and query
            from loopagent.secrets import public_url

            shown = public_url(shown)
        raise ConfigError.invalid(name, err, shown) from None


def describe(config: Config) -> list[tuple[str, str, str]]:
    """(name, shown value, source) for `loop config`; the API key is masked, rules listed one by one."""
    rows = []
    for name in Settings.model_fields:
        value = getattr(config.settings, name)
        if name in RULE_LISTS:
            rows += [(name, r.text, r.source) for r in config.rules if r.verdict == name]
            if not value:
                rows.append((name, "[]", config.sources[name]))
            continue
        if name == "api_key":
            shown = "(not set)" if value is None else "******** (set)"
        elif name == "base_url":
            shown = shown_value(name, value)
        elif isinstance(value, (list, dict)):  # prices, hooks; MCP servers' env values may be keys
            shown = json.dumps({k: {**v, "env": dict.fromkeys(v.get("env") or {}, "***")} for k, v in value.items()}
                               if name == "mcp_servers" else value)
        else:
            shown = "(none)" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        rows.append((name, shown, config.sources[name]))
    return rows
