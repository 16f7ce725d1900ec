"""The guard `spawn.guard` puts before a hook or an MCP server: `python -I -S guard.py LOOP_PID PROGRAM ARGS...`.

It leads the child's process group, runs PROGRAM as its child and passes on its exit status; when loop
dies (the parent-death signal, SIGHUP here) it kills the whole group, which the signal alone would not
reach: it is not inherited across fork. When PROGRAM exits, what it left in the group is ended too. Run as a script, never imported by loop: `_signal` rather than
`signal` (whose enums cost a start-up as long again), nothing from the package.
"""

import _signal
import os

PR_SET_PDEATHSIG = 1


def end_group(*_: object) -> None:
    os.killpg(0, _signal.SIGKILL)


def arm(parent: int) -> None:
    """Have the kernel send SIGHUP when loop (the thread that started us) ends; end now if it has."""
    if os.getpgrp() != os.getpid():  # killing "my group" must never reach loop's own group
        os.setpgid(0, 0)
    _signal.signal(_signal.SIGHUP, end_group)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, _signal.SIGHUP, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        end_group()


def run(argv: list[str]) -> int:
    """PROGRAM as our child, as a plain child of loop would be (default signals); its wait status."""
    pid = os.fork()
    if pid == 0:
        for sig in (_signal.SIGHUP, _signal.SIGPIPE, _signal.SIGXFSZ):  # Python ignores the last two
            _signal.signal(sig, _signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"loop: cannot run {argv[0]}: {exc.strerror}\n".encode())
        os._exit(127)
    null = os.open(os.devnull, os.O_RDWR)  # the child's pipes are the child's: EOF comes when it ends
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue


def leave(status: int) -> None:
    """End what the child left in the group (an MCP server's own children: nobody else will), then exit
    as the child did: the same code, or killed by the same signal. SIGTERM, which we ignore: SIGKILL
    would end us before our exit status is read (for a hook, loop kills the group with SIGKILL after)."""
    _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
    try:
        os.killpg(0, _signal.SIGTERM)
    except OSError:
        pass
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (_signal.SIGKILL, _signal.SIGSTOP):  # those two cannot be handled, so are default
            _signal.signal(sig, _signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    import sys

    arm(int(sys.argv[1]))
    leave(run(sys.argv[2:]))
