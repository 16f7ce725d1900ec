"""The bwrap command line for a spec and a layout: a pure function, tested by value."""

from __future__ import annotations

from loopagent.sandbox.layout import Layout
from loopagent.sandbox.spec import SandboxSpec

# Namespaces: a new user namespace makes the rest possible without privileges; the PID namespace
# takes every process of the call down with its init; all capabilities are dropped, or a root
# inside could unmount the walls. No --new-session: the executor starts bwrap itself in a new
# session (no controlling terminal, so no TIOCSTI into loop's), and --new-session cost ~5 ms a call.
ISOLATION = ("--die-with-parent", "--unshare-user", "--unshare-pid", "--unshare-ipc",
             "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL")

INSIDE_DOOR = "/tmp/.loop-proxy.sock"  # where the call's proxy socket is bound, in the private /tmp


def bwrap_argv(spec: SandboxSpec, layout: Layout, command: list[str], bwrap: str = "bwrap",
               door: str | None = None) -> list[str]:
    """`bwrap OPTIONS -- command`: later mounts cover earlier ones, so the walls come last. With `door`
    (the proxy's socket for this call) the command runs behind the bridge, the proxy variables set."""
    argv = [bwrap, *ISOLATION]
    if not spec.network:
        argv.append("--unshare-net")
    if spec.disable_userns:
        argv.append("--disable-userns")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev"]
    argv += ["--proc", "/proc"] if spec.proc else empty_dir("/proc")  # never the host's /proc: loop's environ
    # The private /tmp and the emptied socket dirs before the workspace, which may live under one of them;
    # the socket dirs stay writable until the end, so mount points can be made in them, then read-only.
    argv += ["--tmpfs", "/tmp"]
    for path in spec.private:
        argv += ["--perms", "0555", "--tmpfs", path]
    for path in spec.through_tmp:  # before the workspace, which may lie inside one of them
        argv += ["--ro-bind-try", path, path]
    argv += ["--ro-bind" if spec.mode == "read-only" else "--bind", spec.workspace, spec.workspace]
    argv += walls(layout)
    for path in layout.hide_dirs:
        argv += empty_dir(path)
    for path in layout.hide_files:
        argv += ["--ro-bind", "/dev/null", path]
    if door is not None:
        from loopagent.sandbox.network import bridged, proxy_env

        argv += ["--ro-bind", door, INSIDE_DOOR]
        for name, value in proxy_env().items():
            argv += ["--setenv", name, value]
        command = bridged(INSIDE_DOOR, command)
    for path in spec.private:
        argv += ["--remount-ro", path]
    argv += ["--chdir", spec.workspace, "--", *command]
    return argv


def walls(layout: Layout) -> list[str]:
    """The binds of the workspace's walls, shallow paths first: a module's git dir is bound writable
    inside the read-only `.git/modules`, and its config read-only inside that."""
    mounts = [(p, ["--bind", p, p]) for p in layout.writable + layout.pinned]
    mounts += [(p, ["--ro-bind", p, p]) for p in layout.protect]
    mounts += [(p, ["--ro-bind-try", p, p]) for p in layout.stubs]  # loop could not write one: no command can
    mounts += [(p, empty_dir(p)) for p in layout.block_dirs]
    mounts += [(p, ["--ro-bind", "/dev/null", p]) for p in layout.block_files]
    argv: list[str] = []
    for _path, options in sorted(mounts, key=lambda m: m[0].rstrip("/").count("/")):  # stable: ties keep order
        argv += options
    return argv


def empty_dir(path: str) -> list[str]:
    """Options that mount an empty, read-only directory at `path`."""
    return ["--perms", "0555", "--tmpfs", path, "--remount-ro", path]
