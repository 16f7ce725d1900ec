"""Does bwrap work on this machine? Asked once per process, by running it."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from loopagent.spawn import absolute_path

PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class Probe:
    """The verdict: the bwrap to run and the features that work, or the problem in a few words."""

    bwrap: str | None
    proc: bool = True
    disable_userns: bool = True
    problem: str | None = None  # "bwrap not found", "user namespaces are not available (...)", ...

    @property
    def works(self) -> bool:
        return self.problem is None


_cache: dict[str | None, Probe] = {}


def probe(path: str | None) -> Probe:
    """The probe of the bwrap found on `path` (a PATH value), cached per process."""
    if path not in _cache:
        # Never a relative PATH entry: it names the working directory, where a model may have left a `bwrap`.
        _cache[path] = run_probe(shutil.which("bwrap", path=absolute_path(path or os.environ.get("PATH", os.defpath))))
    return _cache[path]


def run_probe(bwrap: str | None) -> Probe:
    """Run `true` in the sandbox, dropping what this kernel refuses (a new /proc, --disable-userns)."""
    if bwrap is None:
        return Probe(None, problem="bwrap not found; install bubblewrap")
    first_error = ""
    for proc, disable_userns in ((True, True), (True, False), (False, True), (False, False)):
        error = try_bwrap(bwrap, proc, disable_userns)
        if error is None:
            return Probe(bwrap, proc, disable_userns)
        first_error = first_error or error
    return Probe(bwrap, problem=explain(first_error))


def try_bwrap(bwrap: str, proc: bool, disable_userns: bool) -> str | None:
    """None when bwrap ran `true` with these options, else its error text."""
    argv = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--die-with-parent",
            "--cap-drop", "ALL", *(["--disable-userns"] if disable_userns else []),
            "--ro-bind", "/", "/", "--dev", "/dev", *(["--proc", "/proc"] if proc else []),
            "--tmpfs", "/tmp", "--", "true"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run {bwrap}: {exc}"
    if done.returncode == 0:
        return None
    return done.stderr.decode("utf-8", "replace").strip() or f"{bwrap} exited {done.returncode}"


def explain(error: str) -> str:
    """bwrap's first error line, named for a person."""
    line = error.splitlines()[0] if error else "unknown error"
    line = line.removeprefix("bwrap: ")
    low = line.lower()
    if "namespace" in low or "uid map" in low or "operation not permitted" in low:
        return f"user namespaces are not available ({line})"
    return f"bwrap does not work here ({line})"
