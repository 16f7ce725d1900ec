"""The wall around shell commands: bubblewrap on Linux, and containment of every process a call starts.

spec.py (what the sandbox is), layout.py (the paths to pin, protect and hide), gitdirs.py (the git
directories a command reaches and what in each stays read-only), bwrap.py (the command line, pure),
probe.py (does bwrap work here), executor.py (how a call starts), containment.py (every process
dies with its call), walls.py (the note when a command hit one); network by host: hosts.py (the rules),
proxy.py (the proxy outside), bridge.py (the listener inside), network.py (the bridge's command line
and the proxy variables); after each command, tripwire.py
puts back git metadata that would run a program (gitconfig.py and gitindex.py read git's files,
restorer.py writes without following links).
"""

from loopagent.sandbox.executor import (
    BwrapExecutor,
    Executor,
    PlainExecutor,
    ReadOnlyWhen,
    Sandbox,
    Started,
    open_sandbox,
    read_only,
)
from loopagent.sandbox.spec import MODES, SandboxSpec, spec_from, spec_from_settings

__all__ = ["MODES", "BwrapExecutor", "Executor", "PlainExecutor", "ReadOnlyWhen", "Sandbox", "SandboxSpec", "Started",
           "read_only",
           "open_sandbox", "spec_from", "spec_from_settings"]
