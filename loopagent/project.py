"""What a project file (<workspace>/.loop/config.json) may set: it arrives with a repository that may
be hostile, so it may only tighten, and it may never name a program for loop to start.
"""

from __future__ import annotations

import json
from typing import Any

from loopagent.policy import STRICTNESS

SANDBOX_MODES = ("off", "workspace-write", "read-only")  # weakest first, as in loopagent/sandbox/spec.py
# Settings that start programs: a project file's are dropped unvalidated (opening a repository starts
# nothing), and so are LOOP_* variables naming them: only the user file or a flag may declare them.
USER_ONLY = {
    "mcp_servers": "only the user file or --mcp-config may declare servers (opening a repository starts nothing)",
    "hooks": "only the user file may declare hooks (opening a repository starts nothing)",
}
# What a project file may set, and how. Every other key (base_url, api_key, model, allow, env_allow,
# check, fields added later) is ignored from a project file.
PROJECT_TIGHTENS = {
    "approval": "stricter", "deny": "add", "checkpoints": "enable",
    "sandbox": "stricter sandbox", "sandbox_network": "disable", "lsp": "disable",
    "network_allow": "narrow", "network_deny": "add",  # network by host: the intersection with the user's
    **{name: "lower" for name in (
        "max_steps", "max_tokens_total", "ctx_size", "max_tokens", "retries", "connect_timeout",
        "read_timeout", "first_token_timeout", "shell_timeout", "instructions_max_bytes", "timeout",
        "check_retries", "check_timeout", "lsp_timeout")},
}


def drop_user_only(values: dict[str, Any], where, warnings: list[str]) -> None:
    """Take USER_ONLY keys out of `values` (a project file's, or LOOP_* variables'), one warning each."""
    for key, why in USER_ONLY.items():
        if key in values:
            value = values.pop(key)
            names = ", ".join(map(str, value)) if isinstance(value, dict) else type(value).__name__
            warnings.append(f'{where(key)}: ignored "{key}" ({names}); {why}')


def tighten_only(values: dict[str, Any], where, current, warnings: list[str]) -> dict[str, Any]:
    """The project values that tighten `current` (a Settings); a warning for each one ignored."""
    kept = {}
    for key, value in values.items():
        how = PROJECT_TIGHTENS.get(key)
        old = getattr(current, key)
        new = getattr(type(current)(**{key: value}), key)
        if how == "add":
            kept[key] = value
        elif how == "stricter" and STRICTNESS.index(new) >= STRICTNESS.index(old):
            kept[key] = value
        elif how == "enable" and new:
            kept[key] = value
        elif how == "lower" and (old in (None, "auto") or (new not in (None, "auto") and new <= old)):
            kept[key] = value
        elif how == "stricter sandbox" and SANDBOX_MODES.index(new) >= SANDBOX_MODES.index(old):
            kept[key] = value
        elif how == "disable" and new is False:
            kept[key] = value
        elif how == "narrow":
            from loopagent.sandbox.hosts import narrow

            kept[key], dropped = narrow(old, new)
            if dropped:
                warnings.append(f'{where(key)}: ignored "{key}" entries {json.dumps(dropped)}; a project file '
                                "may only narrow the user's network_allow")
        else:
            shown = "***" if key == "api_key" else json.dumps(shown_value(key, value))
            why = ("a project file may only tighten (stricter approval or sandbox, more deny rules, lower limits)"
                   if how else f"a project file may not set {key}")
            warnings.append(f'{where(key)}: ignored "{key}": {shown}; {why}')
    return kept


def shown_value(key: str, value: Any) -> Any:
    """A value as it may be printed: a URL without its user:password and query (keys hide there)."""
    if key != "base_url" or not isinstance(value, str):
        return value
    from urllib.parse import urlsplit

    from loopagent.secrets import public_url

    try:
        parts = urlsplit(value)
        hidden = parts.username or parts.password or parts.query
    except ValueError:
        hidden = True
    return f"{public_url(value)} (credentials and query hidden)" if hidden else value
