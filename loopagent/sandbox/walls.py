"""The note added to a failed command's result when its output shows it hit a wall of the sandbox."""

from __future__ import annotations

from loopagent.sandbox.spec import SandboxSpec

# EBUSY: renaming over, or removing, a protected path that is a mount point inside the sandbox.
WRITE_SIGNS = ("Read-only file system", "EROFS", "Device or resource busy", "EBUSY")
NETWORK_SIGNS = ("Network is unreachable", "Temporary failure in name resolution", "Could not resolve host",
                 "Name or service not known", "No address associated with hostname", "ENETUNREACH",
                 "getaddrinfo failed", "nodename nor servname")
LOCAL_NETWORK_SIGNS = ("Connection refused", "ECONNREFUSED")
# Exit codes of a network failure from programs often run silenced (curl -s, wget -q): no output to read.
QUIET_NETWORK_EXITS = {"curl": (5, 6, 7), "wget": (4,)}


def wall_note(output: str, spec: SandboxSpec, exit_code: int | None = None, command: str = "") -> str | None:
    """A short note naming the wall the output (or the exit code of a silenced download) shows and how
    the user can lift it; None when none shows."""
    if spec.mode == "off":
        return None
    notes = []
    if any(sign in output for sign in WRITE_SIGNS):
        notes.append(write_note(output, spec))
    if not spec.network:
        if any(sign in output for sign in NETWORK_SIGNS) or quiet_network_failure(command, exit_code):
            notes.append(network_note(spec))
        elif any(sign in output for sign in LOCAL_NETWORK_SIGNS):
            notes.append("the sandbox has no network, not even to servers on this machine outside the "
                         "command; the user can allow it with --network")
    hidden = [p for p in spec.hidden if p in output]
    if hidden:
        notes.append(f"{hidden[0]} is hidden (empty) inside the sandbox; it holds credentials")
    if not notes:
        return None
    return "[sandbox] " + "; ".join(notes) + "."


def network_note(spec: SandboxSpec) -> str:
    if spec.proxied:
        return ("the sandbox reaches only the hosts in network_allow, through loop's proxy (HTTP_PROXY and "
                "HTTPS_PROXY are set; a program that ignores them gets no network); the user can add a host "
                "with --allow-host HOST, or allow all with --network")
    return "the sandbox has no network; the user can allow it with --network"


def quiet_network_failure(command: str, exit_code: int | None) -> bool:
    """True when `command` runs curl or wget and the exit code is theirs for "could not reach the host"."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    programs = {w.rsplit("/", 1)[-1] for w in words}
    return any(exit_code in codes for name, codes in QUIET_NETWORK_EXITS.items() if name in programs)


def write_note(output: str, spec: SandboxSpec) -> str:
    if spec.mode == "read-only":
        return "the sandbox is read-only in this run (--sandbox read-only); only a private /tmp is writable"
    if ".git" in output or ".loop" in output:
        return ("git metadata that can run programs (config, hooks/, info/, commondir, of every repository in "
                "the workspace) and .loop/ are read-only inside the sandbox and cannot be removed (nor .git "
                "created: the user can run git init); the user can lift this with --sandbox off")
    return ("the sandbox lets commands write only the workspace and a private /tmp; the user can add a "
            "writable directory with sandbox_writable in their config file, or run with --sandbox off")
