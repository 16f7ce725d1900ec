"""How a shell call's argv is started: plainly (`--sandbox off`) or inside bwrap.

The shell tool owns waiting, output, timeouts and killing; an executor only starts the
process (in its own session, stdin empty, stdout and stderr on one pipe) and, when the
call is over, tidies what the start left behind.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from loopagent.sandbox.containment import become_subreaper
from loopagent.sandbox.layout import Layout, place_stubs, remove_mount_points, survey
from loopagent.sandbox.spec import SandboxSpec
from loopagent.sandbox.walls import wall_note

if TYPE_CHECKING:
    from loopagent.sandbox.proxy import Door, Proxy


@dataclass
class Started:
    """A running call: its process, the mount points to remove once it is over, its proxy door."""

    proc: subprocess.Popen
    mount_points: tuple[str, ...] = ()
    door: Door | None = None

    def close(self) -> None:
        """Remove the empty files and dirs bwrap made on the host to mount over; close the proxy door."""
        remove_mount_points(self.mount_points)
        if self.door is not None:
            self.door.close()

    def blocked(self) -> list[str]:
        """`network: blocked HOST (why)` for each host the proxy refused this call."""
        return self.door.lines() if self.door is not None else []


@dataclass
class PlainExecutor:
    """Runs commands as loop's own user, unsandboxed (`--sandbox off`, or no working bwrap)."""

    reason: str = ""  # why: "" when the user chose it

    def describe(self) -> str:
        """For the approval prompt: how the command will run."""
        return f"not sandboxed ({self.reason})" if self.reason else "not sandboxed"

    def spawn(self, argv: list[str], cwd: str, env: Mapping[str, str]) -> Started:
        """Start `argv`; raises OSError when it cannot. Under spawn.guard: nothing but bwrap's own
        --die-with-parent would end the call's processes when loop is SIGKILLed."""
        from loopagent.spawn import guard

        return Started(popen(guard(argv), cwd, env))

    def note(self, output: str, exit_code: int | None = None, command: str = "") -> str | None:
        """A note for a failed command's result: which wall it hit (none here)."""
        return None

    def close(self) -> None:
        """End what the executor started for the run (nothing here)."""


@dataclass
class BwrapExecutor:
    """Runs commands inside bwrap as `spec` says; the layout is read again for every call."""

    spec: SandboxSpec
    bwrap: str = "bwrap"
    last: Layout = field(default_factory=Layout)
    proxy: Proxy | None = None  # started by the first call that needs it, closed with the run
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def describe(self) -> str:
        return self.spec.describe()

    def spawn(self, argv: list[str], cwd: str, env: Mapping[str, str]) -> Started:
        from loopagent.sandbox.bwrap import bwrap_argv

        door = self.open_door() if self.spec.proxied else None
        self.last = survey(self.spec)
        place_stubs(self.last)
        try:
            proc = popen(bwrap_argv(self.spec, self.last, argv, self.bwrap, door.path if door else None), cwd, env)
        except OSError:
            remove_mount_points(self.last.mount_points())
            if door is not None:
                door.close()
            raise
        return Started(proc, self.last.mount_points(), door)

    def open_door(self) -> Door:
        """This call's socket into the proxy, the proxy started first when this is the first call."""
        from loopagent.sandbox import proxy

        with self.lock:
            if self.proxy is None:
                resolve = proxy.system_resolver
                if self.spec.hosts_file:
                    resolve = proxy.resolver_for(proxy.read_hosts(self.spec.hosts_file))
                assert self.spec.hosts is not None  # proxied
                self.proxy = proxy.Proxy(self.spec.hosts, resolve, self.spec.workspace)
            return self.proxy.open_door()

    def close(self) -> None:
        """End the proxy, if a call started it."""
        with self.lock:
            if self.proxy is not None:
                self.proxy.close()
                self.proxy = None

    def note(self, output: str, exit_code: int | None = None, command: str = "") -> str | None:
        return wall_note(output, self.spec, exit_code, command)


def read_only(executor: PlainExecutor | BwrapExecutor) -> PlainExecutor | BwrapExecutor:
    """The same executor with the workspace bound read-only and no extra writable dirs (approval mode plan,
    read-only children, `loop review`); a plain executor has no walls to change (the policy then admits
    only commands it can show to be read-only)."""
    if isinstance(executor, PlainExecutor) or executor.spec.mode == "read-only":
        return executor
    from dataclasses import replace

    return BwrapExecutor(replace(executor.spec, mode="read-only", writable=()), executor.bwrap)


@dataclass
class ReadOnlyWhen:
    """Runs each call with the workspace read-only while `now()` says so (the policy is in plan mode), else
    as `normal` does: the mode may change between turns (`/plan`), the executor follows at the next call."""

    normal: PlainExecutor | BwrapExecutor
    now: Callable[[], bool]
    walled: PlainExecutor | BwrapExecutor | None = None  # `normal` read-only, made once: its proxy is closed too

    def __post_init__(self) -> None:
        if self.walled is None:
            self.walled = read_only(self.normal)

    def current(self) -> PlainExecutor | BwrapExecutor:
        return self.walled if self.now() else self.normal  # type: ignore[return-value]

    def close(self) -> None:
        """End what either executor started for the run (the network proxy)."""
        self.normal.close()
        if self.walled is not None and self.walled is not self.normal:
            self.walled.close()

    def describe(self) -> str:
        return self.current().describe()

    def spawn(self, argv: list[str], cwd: str, env: Mapping[str, str]) -> Started:
        return self.current().spawn(argv, cwd, env)

    def note(self, output: str, exit_code: int | None = None, command: str = "") -> str | None:
        return self.current().note(output, exit_code, command)


Executor = PlainExecutor | BwrapExecutor | ReadOnlyWhen


def popen(argv: list[str], cwd: str, env: Mapping[str, str]) -> subprocess.Popen:
    become_subreaper()
    return subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)


@dataclass(frozen=True)
class Sandbox:
    """The sandbox of a run: the executor, the state the policy needs, the line for the user."""

    executor: Executor
    state: str  # "sandboxed" | "off" | "unavailable"
    problem: str | None = None  # why it is unavailable (or degraded)
    verdict: str | None = None  # one line for stderr, None when the sandbox is fully in force


def open_sandbox(spec: SandboxSpec, environ: Mapping[str, str], chosen_by: str = "") -> Sandbox:
    """Probe bwrap (once per process) and pick the executor for `spec`."""
    if spec.mode == "off":
        where = f" ({chosen_by})" if chosen_by and chosen_by != "default" else ""
        return Sandbox(PlainExecutor(), "off",
                       verdict=f"sandbox: off{where}; shell commands run unsandboxed")
    from loopagent.sandbox.probe import probe

    found = probe(environ.get("PATH", os.defpath))
    if not found.works:
        return Sandbox(PlainExecutor(found.problem or ""), "unavailable", found.problem,
                       f"sandbox: unavailable ({found.problem}); in mode all shell commands will ask; "
                       f"--sandbox off runs them unsandboxed")
    from dataclasses import replace

    spec = replace(spec, proc=found.proc, disable_userns=found.disable_userns)
    verdict = None
    if not found.proc:
        verdict = "sandbox: this kernel refused a new /proc inside the sandbox; /proc is empty there"
    return Sandbox(BwrapExecutor(spec, found.bwrap or "bwrap"), "sandboxed", None, verdict)


def walled_argv(mode: str, workspace: Path, argv: list[str], environ: Mapping[str, str]):
    """`argv` wrapped to run inside the sandbox `mode` gives `workspace` (no network), for a caller that
    starts and waits for the process itself (`loop eval`'s checks): (argv, the cleanup to call after it,
    why it runs unsandboxed or None). `environ` is the one the spec hides $LOOP_HOME and $HOME's stores by."""
    from loopagent.sandbox.bwrap import bwrap_argv
    from loopagent.sandbox.spec import spec_from

    box = open_sandbox(spec_from(mode, workspace, environ), environ)
    if not isinstance(box.executor, BwrapExecutor):
        return argv, lambda: None, "off" if box.state == "off" else box.problem or "unavailable"
    layout = survey(box.executor.spec)
    place_stubs(layout)
    points = layout.mount_points()
    return bwrap_argv(box.executor.spec, layout, argv, box.executor.bwrap), lambda: remove_mount_points(points), None
