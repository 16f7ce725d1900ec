"""The note added to a failed command's result when its output shows it hit a wall of the sandbox."""

from __future__ import annotations

from loopagent.sandbox.spec import SandboxSpec

# EBUSY: renaming over, or removing, a protected path that is a mount point inside the sandbox.
WRITE_SIGNS = ("Read-only file system", "EROFS", "Device or resource busy", "EBUSY")
NETWORK_SIGNS = ("Network is unreachable", "Temporary failure in name resolution", "Could not resolve host",
                 "Name or service not known", "No address associated with hostname", "ENETUNREACH",
                 "getaddrinfo failed", "nodename nor servname")
LOCAL_NETWORK_SIGNS = ("Connection refused", "ECONNREFUSED")


def wall_note(output: str, spec: SandboxSpec) -> str | None:
    """A short note naming the wall the output shows and how the user can lift it; None when none shows."""
    if spec.mode == "off":
        return None
    notes = []
    if any(sign in output for sign in WRITE_SIGNS):
        notes.append(write_note(output, spec))
    if not spec.network:
        if any(sign in output for sign in NETWORK_SIGNS):
            notes.append("the sandbox has no network; the user can allow it with --network")
        elif any(sign in output for sign in LOCAL_NETWORK_SIGNS):
            notes.append("the sandbox has no network, not even to servers on this machine outside the "
                         "command; the user can allow it with --network")
    hidden = [p for p in spec.hidden if p in output]
    if hidden:
        notes.append(f"{hidden[0]} is hidden (empty) inside the sandbox; it holds credentials")
    if not notes:
        return None
    return "[sandbox] " + "; ".join(notes) + "."


def write_note(output: str, spec: SandboxSpec) -> str:
    if spec.mode == "read-only":
        return "the sandbox is read-only in this run (--sandbox read-only); only a private /tmp is writable"
    if ".git" in output or ".loop" in output:
        return (".git/hooks, .git/config and .loop/ are read-only inside the sandbox (and .git cannot be "
                "created: the user can run git init); the user can lift this with --sandbox off")
    return ("the sandbox lets commands write only the workspace and a private /tmp; the user can add a "
            "writable directory with sandbox_writable in their config file, or run with --sandbox off")
