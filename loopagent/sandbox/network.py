"""The sandbox's side of network by host: the bridge in front of the command, and the variables
that point every proxy-aware program at it."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

PORT = 3128  # the bridge's loopback port: nothing else listens in a fresh network namespace
URL = f"http://127.0.0.1:{PORT}"


def proxy_env() -> dict[str, str]:
    """The variables set inside: both cases (curl and apt read only the lowercase ones), Node's opt-in,
    and pip's and npm's own settings."""
    names = {}
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        names[name] = names[name.upper()] = URL
    names["no_proxy"] = names["NO_PROXY"] = "localhost,127.0.0.1,::1"
    names["NODE_USE_ENV_PROXY"] = "1"  # Node's own fetch ignores the variables without it (Node 24+)
    names["PIP_PROXY"] = URL
    names["npm_config_proxy"] = names["npm_config_https_proxy"] = URL
    return names


def bridged(door: str, command: list[str]) -> list[str]:
    """`command` behind the bridge: run by this interpreter in isolated mode (-I: no workspace on
    sys.path, no PYTHON* variables; -S: no site-packages), with the bridge's source as -c."""
    return [sys.executable, "-I", "-S", "-c", bridge_source(), door, str(PORT), *command]


@functools.cache
def bridge_source() -> str:
    return (Path(__file__).parent / "bridge.py").read_text(encoding="utf-8")
