"""What the sandbox of a run is: a frozen value built once from the settings."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loopagent.sandbox.hosts import HostRules

MODES = ("off", "workspace-write", "read-only")  # weakest first: a project file may only move right

# Credential stores in $HOME that a command has no business reading; hidden (empty) inside.
SECRET_STORES = (
    ".ssh", ".aws", ".gnupg", ".config/gh", ".netrc", ".docker", ".kube", ".pypirc",
    ".git-credentials", ".config/gcloud", ".azure", ".npmrc", ".cargo/credentials",
    ".cargo/credentials.toml",
)
DAEMON_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock", "/run/podman", "/run/containerd")
# Where the host's daemons keep their Unix sockets (a path socket is reachable without a network):
# each is an empty read-only dir inside, as /tmp is a private one.
SOCKET_DIRS = ("/run", "/var/run", "/var/tmp")


@dataclass(frozen=True)
class SandboxSpec:
    """Where a sandboxed command may write and what it may reach; paths are absolute strings."""

    mode: str  # one of MODES
    workspace: str
    network: bool = False
    writable: tuple[str, ...] = ()  # extra writable directories (workspace-write only)
    hidden: tuple[str, ...] = ()  # hidden behind an empty mount when they exist
    private: tuple[str, ...] = ()  # host socket dirs shown empty and read-only (SOCKET_DIRS, resolved)
    # Paths under /tmp or a private dir that commands need (a venv or a toolchain on PATH there, the
    # resolver's file when the network is on), shown read-only through the dir that would hide them.
    through_tmp: tuple[str, ...] = ()
    proc: bool = True  # a fresh /proc; False when the kernel refuses one (then /proc is empty)
    disable_userns: bool = True  # no nested user namespaces (where bwrap and the kernel allow it)
    # network_allow/network_deny: without `network`, a proxy outside lets commands reach these hosts only
    hosts: HostRules | None = None
    hosts_file: str | None = None  # network_hosts: names pinned to addresses for the proxy (hosts(5))

    @property
    def proxied(self) -> bool:
        """Whether calls go through the allowlist proxy (hosts allowed, the network not wholly on)."""
        return self.hosts is not None and bool(self.hosts.allow) and not self.network

    def describe(self) -> str:
        """One phrase for the approval prompt and `loop config`: what a command may touch."""
        if self.mode == "off":
            return "not sandboxed"
        where = "workspace read-only" if self.mode == "read-only" else "workspace writable"
        if self.mode == "workspace-write" and self.writable:
            where += f" (+{len(self.writable)} more dir{'s' if len(self.writable) > 1 else ''})"
        net = "network on" if self.network else self.hosts.describe() if self.proxied else "no network"
        return f"sandboxed: {where}, {net}" + ("" if self.proc else ", no /proc")


def spec_from(mode: str, workspace: Path, environ: Mapping[str, str], network: bool = False,
              writable: list[str] | tuple[str, ...] = (), hosts: HostRules | None = None,
              hosts_file: str | None = None) -> SandboxSpec:
    """The spec for `workspace`, with $LOOP_HOME and the secret stores of $HOME hidden."""
    root = os.path.realpath(workspace)
    home = environ.get("HOME") or os.path.expanduser("~")
    loop_home = environ.get("LOOP_HOME") or os.path.join(home, ".loop")
    hidden = [os.path.abspath(loop_home)] + [os.path.join(home, name) for name in SECRET_STORES]
    # Sockets that act for the user (ssh-agent, keyrings, docker): reachable even without a network.
    hidden += [environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}", *DAEMON_SOCKETS]
    if environ.get("SSH_AUTH_SOCK"):
        hidden.append(environ["SSH_AUTH_SOCK"])
    extra = []
    for entry in writable:
        path = home + entry[1:] if entry == "~" or entry.startswith("~/") else entry
        extra.append(os.path.realpath(os.path.join(root, path)))  # relative: to the workspace
    private = private_dirs()
    through = programs_under_tmp(environ, private)
    resolver = os.path.realpath("/etc/resolv.conf")  # often a link into /run (systemd-resolved)
    if network and resolver != "/etc/resolv.conf" and os.path.isfile(resolver) and under(resolver, private):
        through += (resolver,)
    return SandboxSpec(mode=mode, workspace=root, network=network, writable=tuple(extra),
                       hidden=tuple(dict.fromkeys(hidden)), private=private, through_tmp=through,
                       hosts=hosts, hosts_file=hosts_file)


def private_dirs() -> tuple[str, ...]:
    """SOCKET_DIRS that exist here, resolved (/var/run is mostly a link to /run), /tmp's own excluded."""
    found = (os.path.realpath(d) for d in SOCKET_DIRS if os.path.isdir(d))
    return tuple(d for d in dict.fromkeys(found) if d not in ("/", "/tmp"))


def under(path: str, dirs: tuple[str, ...]) -> bool:
    return any(path.startswith(d.rstrip("/") + "/") for d in dirs)


def programs_under_tmp(environ: Mapping[str, str], private: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The prefixes of PATH and PYTHONPATH entries, $VIRTUAL_ENV and this interpreter below /tmp
    (or below one of the `private` dirs).

    A clone in /tmp with its venv (CI does this) must still find its `python` inside the
    sandbox; `X/bin` on PATH stands for the prefix `X`, whose lib/ the interpreter needs.
    """
    entries = [p for var in ("PATH", "PYTHONPATH") for p in environ.get(var, "").split(os.pathsep) if p]
    entries += [environ.get("VIRTUAL_ENV", ""), sys.prefix, sys.base_prefix]
    found = []
    for entry in filter(None, entries):
        # Resolved and as written: NixOS puts /run/current-system/sw/bin, a link into /nix/store, on PATH.
        for path in dict.fromkeys([os.path.realpath(entry), os.path.abspath(entry)]):
            if os.path.basename(path) == "bin":
                path = os.path.dirname(path)
            if under(path, ("/tmp", *private)) and os.path.isdir(path):
                found.append(path)
    return tuple(sorted(dict.fromkeys(found), key=len))


def spec_from_settings(settings, workspace: Path, environ: Mapping[str, str]) -> SandboxSpec:
    """The spec from `sandbox`, `sandbox_network`, `sandbox_writable` and the network_* settings."""
    from loopagent.sandbox.hosts import rules_from

    hosts = rules_from(settings.network_allow, settings.network_deny)
    return spec_from(settings.sandbox, workspace, environ, settings.sandbox_network, settings.sandbox_writable,
                     hosts, settings.network_hosts)
