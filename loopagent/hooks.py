"""Hooks: the user's own commands around the loop (pre_tool, post_tool, stop, session_start).

Each hook is a shell command from the user file ($LOOP_HOME/config.json; a project file's are
ignored, see config.py) run with one JSON object on stdin, in the workspace, outside the sandbox
(it is the user's own program, not the model's), with the user's environment minus secrets.
The contract, close to Claude Code's so scripts carry over: exit 0 proceeds (stdout may be
`{"decision": "block", "reason": ...}`, or for post_tool/session_start `{"context": ...}`); exit 2
blocks with stderr as the reason; anything else (another code, a crash, a timeout) is a warning
and does not block, unless the hook says `"on_error": "block"`.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from loopagent.cancel import Cancel
from loopagent.events import Event, HookRan, Notice, SessionStarted
from loopagent.messages import ToolCall, ToolResult

KINDS = ("pre_tool", "post_tool", "stop", "session_start")
DEFAULT_TIMEOUT = 30.0
MAX_STOP_BLOCKS = 3  # a stop hook may send the model back this often per run
MAX_TEXT = 4000  # characters of a hook's reason or context the model reads
KEYS = {"match", "command", "timeout", "on_error"}
DRAIN = 0.5  # seconds to read what an exited hook left in its pipes, while what it left running is killed
POLL = 0.02  # seconds between exit checks where the kernel has no pidfd
MAX_OUTPUT = 1 << 20  # bytes kept of a hook's stdout and of its stderr (the model reads MAX_TEXT characters)

Emit = Callable[[Event], None]


@dataclass(frozen=True)
class Hook:
    """One configured command: which event, which tools (a regex on the name; None: all)."""

    kind: str
    command: str
    match: str = ""
    timeout: float = DEFAULT_TIMEOUT
    on_error: Literal["warn", "block"] = "warn"
    index: int = 0  # its place in its list, so a message can say which hook it was

    def applies(self, tool: str) -> bool:
        return not self.match or re.fullmatch(self.match, tool) is not None

    @property
    def label(self) -> str:
        return f"{self.kind}[{self.index}] {self.command}"


@dataclass(frozen=True)
class Outcome:
    """What one hook run said: proceed, block (with a reason), or failed (a warning), and any context."""

    hook: Hook
    verdict: Literal["ok", "block", "failed"]
    reason: str = ""
    context: str = ""


def check_hooks(value: Any) -> Any:
    """Validate the `hooks` setting's shape; raises ValueError naming what is wrong."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError('must be an object like {"pre_tool": [{"match": "shell", "command": "..."}]}')
    for kind, items in value.items():
        if kind not in KINDS:
            raise ValueError(f"unknown hook event {kind!r} (one of {', '.join(KINDS)})")
        if not isinstance(items, list):
            raise ValueError(f"{kind}: must be a list of {{\"match\", \"command\", \"timeout\"}} objects")
        for i, item in enumerate(items):
            check_item(f"{kind}[{i}]", item)
    return value


def check_item(where: str, item: Any) -> None:
    if not isinstance(item, dict) or not isinstance(item.get("command"), str) or not item["command"].strip():
        raise ValueError(f"{where}: needs a \"command\" string")
    if extra := set(item) - KEYS:
        raise ValueError(f"{where}: unknown key {sorted(extra)[0]!r} (one of {', '.join(sorted(KEYS))})")
    try:
        re.compile(item.get("match") or "")
    except (re.error, TypeError) as exc:
        raise ValueError(f"{where}: match is not a regular expression ({exc})") from None
    timeout = item.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(f"{where}: timeout must be a positive number of seconds")
    if item.get("on_error", "warn") not in ("warn", "block"):
        raise ValueError(f"{where}: on_error must be \"warn\" or \"block\"")


def parse_hooks(value: Mapping[str, list[dict]]) -> list[Hook]:
    """The checked `hooks` setting as Hook values, in config order."""
    return [Hook(kind, item["command"], item.get("match") or "", float(item.get("timeout", DEFAULT_TIMEOUT)),
                 item.get("on_error", "warn"), i)
            for kind, items in (value or {}).items() for i, item in enumerate(items)]


def clipped(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " …[clipped]"


@dataclass
class Hooks:
    """The configured hooks of one agent; with none (the default) every step is a no-op."""

    hooks: list[Hook] = field(default_factory=list)
    cwd: Path = field(default_factory=Path.cwd)
    env: Mapping[str, str] | None = None  # the user's environment minus secrets
    session_id: str = ""
    started: bool = False  # session_start runs once per agent (a REPL's many runs share it)

    def observe(self, event: Event) -> None:
        """Listener: learn the session id the hooks' JSON carries."""
        if isinstance(event, SessionStarted):
            self.session_id = event.id

    def pre_tool(self, call: ToolCall, arguments: dict[str, Any], emit: Emit,
                 cancel: Cancel) -> str:
        """'' to let the call run, else why a hook blocked it (naming the hook)."""
        payload = {**self.about(call), "arguments": arguments}
        for outcome in self.fire("pre_tool", call.name, payload, emit, cancel):
            if outcome.verdict == "block":
                return f"{outcome.reason or 'no reason given'} (hook {outcome.hook.label})"
        return ""

    def post_tool(self, call: ToolCall, arguments: dict[str, Any], result: ToolResult, emit: Emit,
                  cancel: Cancel) -> ToolResult:
        """The result with every context a post_tool hook added (a block is shown as context too)."""
        payload = {**self.about(call), "arguments": arguments,
                   "result": {"content": result.content, "is_error": result.is_error}}
        extra = [o.context or o.reason for o in self.fire("post_tool", call.name, payload, emit, cancel)
                 if o.context or o.verdict == "block"]
        if not extra:
            return result
        notes = "\n".join(f"[post_tool hook] {text}" for text in extra)
        return replace(result, content=f"{result.content}\n\n{notes}")

    def stop(self, text: str, emit: Emit, cancel: Cancel) -> str:
        """'' to let the run end, else the reason a stop hook sends the model back with."""
        for outcome in self.fire("stop", "", {**self.about(None), "text": text}, emit, cancel):
            if outcome.verdict == "block":
                return outcome.reason or f"the stop hook {outcome.hook.label} asks you to continue"
        return ""

    def session_start(self, task: str, emit: Emit, cancel: Cancel) -> list[str]:
        """Once per agent: the context session_start hooks print (exit 0 stdout, or JSON `context`)."""
        if self.started:
            return []
        self.started = True
        outcomes = self.fire("session_start", "", {**self.about(None), "text": task}, emit, cancel)
        return [o.context for o in outcomes if o.context]

    def about(self, call: ToolCall | None) -> dict[str, Any]:
        return {"session_id": self.session_id, "cwd": str(self.cwd),
                "tool": call.name if call else "", "call_id": call.id if call else ""}

    def fire(self, kind: str, tool: str, payload: dict[str, Any], emit: Emit,
             cancel: Cancel) -> list[Outcome]:
        """Run the hooks of `kind` that match `tool`, in order, each announced as it ends; stop at a block."""
        outcomes = []
        for hook in self.hooks:
            if hook.kind != kind or (kind in ("pre_tool", "post_tool") and not hook.applies(tool)):
                continue
            if cancel.is_set():  # a cancelled turn runs no more of the user's commands
                break
            started = time.monotonic()
            outcome = run_hook(hook, {"event": kind, **payload}, self.cwd, self.env, cancel)
            announce(outcome, tool, emit, time.monotonic() - started)
            outcomes.append(outcome)
            if outcome.verdict == "block":
                break
        return outcomes


def announce(outcome: Outcome, tool: str, emit: Emit, seconds: float = 0.0) -> None:
    """One HookRan per run (a dim line on screen, a `hook` line in --json and the session); a failure also warns."""
    hook = outcome.hook
    emit(HookRan(hook.kind, f"[{hook.index}] {hook.command}", tool, outcome.verdict, outcome.reason, seconds))
    if outcome.verdict == "failed":
        emit(Notice("warning", f"hook {outcome.hook.label}: {outcome.reason}".replace("\n", " ")[:300]))


def run_hook(hook: Hook, payload: dict[str, Any], cwd: Path, env: Mapping[str, str] | None,
             cancel: Cancel) -> Outcome:
    """Run one hook command to its verdict; never raises. Ctrl+C (`cancel`) ends it at once.

    The hook is done when its own process exits, not when its pipes close: a `sleep 300 &` it leaves
    holds them open. What it left running is killed then (its process group), and with loop (`guard`).
    """
    from loopagent.spawn import guard, safe_env

    try:  # its own session, so Ctrl+C does not reach it: the token kills its group instead
        proc = subprocess.Popen(guard(["/bin/sh", "-c", hook.command]), cwd=cwd, env=safe_env(env),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as exc:
        return failure(hook, f"cannot start it: {exc}")
    forget = cancel.on_cancel(lambda: kill_group(proc))
    try:
        out, err, ended = collect(proc, json.dumps(payload).encode(), hook.timeout)
    finally:
        forget()
        kill_group(proc)  # before the reap below: the group's id cannot have been reused yet
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # not killable (uninterruptible sleep): left to the kernel
            pass
    if cancel.is_set():
        return Outcome(hook, "failed", "cancelled")
    if not ended:
        return failure(hook, f"timed out after {hook.timeout:g} s")
    stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
    if proc.returncode == 2:
        return Outcome(hook, "block", clipped(stderr) or "no reason given")
    if proc.returncode != 0:
        said = f": {clipped(stderr)}" if stderr.strip() else ""
        return failure(hook, f"exit status {proc.returncode}{said}")
    return decided(hook, stdout)


def collect(proc: subprocess.Popen, data: bytes, timeout: float) -> tuple[bytes, bytes, bool]:
    """Feed `data` to the process and read its stdout and stderr until it exits (then at most DRAIN
    more, its group killed meanwhile): (stdout, stderr, whether it exited within `timeout`)."""
    outputs = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    pending = memoryview(data)
    selector = selectors.DefaultSelector()
    for pipe in outputs:
        os.set_blocking(pipe.fileno(), False)
        selector.register(pipe, selectors.EVENT_READ)
    os.set_blocking(proc.stdin.fileno(), False)
    selector.register(proc.stdin, selectors.EVENT_WRITE)
    exit_fd = exit_watch(proc.pid)
    if exit_fd is not None:
        selector.register(exit_fd, selectors.EVENT_READ)
    deadline, ended = time.monotonic() + timeout, False
    try:
        while any(key.fileobj in outputs for key in selector.get_map().values()):
            if not ended and exited(proc):
                ended, deadline = True, time.monotonic() + DRAIN
                kill_group(proc)  # what it left running; its output so far is in the pipes
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for key, _ in selector.select(left if ended or exit_fd is not None else min(left, POLL)):
                if key.fileobj is proc.stdin:
                    pending = feed(proc.stdin, pending, selector)
                elif key.fileobj in outputs:
                    read_into(key.fileobj, outputs[key.fileobj], selector)
                else:  # the exit watch: checked at the top of the loop
                    selector.unregister(key.fileobj)
    finally:
        selector.close()
        if exit_fd is not None:
            os.close(exit_fd)
        if not proc.stdin.closed:
            proc.stdin.close()
    if not ended:  # it closed its pipes but runs on
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            ended = True
        except subprocess.TimeoutExpired:
            pass
    return bytes(outputs[proc.stdout]), bytes(outputs[proc.stderr]), ended


def feed(pipe: Any, pending: memoryview, selector: selectors.BaseSelector) -> memoryview:
    """Write what the pipe takes now; close it when all is written or the hook stopped reading."""
    try:
        pending = pending[os.write(pipe.fileno(), pending[:65536]):]
    except BlockingIOError:
        return pending
    except OSError:  # it exited or closed stdin without reading it all: not an error of the hook's
        pending = pending[:0]
    if not pending:
        selector.unregister(pipe)
        pipe.close()
    return pending


def read_into(pipe: Any, buffer: bytearray, selector: selectors.BaseSelector) -> None:
    try:
        block = os.read(pipe.fileno(), 65536)
    except BlockingIOError:
        return
    if not block:
        selector.unregister(pipe)
    elif len(buffer) < MAX_OUTPUT:  # read on past it (the hook must not block on a full pipe), keep none
        buffer += block


def exit_watch(pid: int) -> int | None:
    """A descriptor that turns readable when `pid` exits (Linux 5.3+), or None: then `collect` polls."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def exited(proc: subprocess.Popen) -> bool:
    """Whether the child has exited, without reaping it (so its group id stays its own until we kill it)."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True
    except AttributeError:  # no waitid on this system: reap it, a small risk for the group kill after
        return proc.poll() is not None


def decided(hook: Hook, stdout: str) -> Outcome:
    """Exit 0: JSON on stdout may block or add context; plain text is context (session_start, post_tool)."""
    try:
        said = json.loads(stdout) if stdout.strip().startswith("{") else None
    except ValueError:
        said = None
    if not isinstance(said, dict):
        plain = hook.kind in ("session_start", "post_tool")
        return Outcome(hook, "ok", context=clipped(stdout) if plain else "")
    context = said.get("context") or said.get("additionalContext") or ""
    context = clipped(context if isinstance(context, str) else json.dumps(context))
    if said.get("decision") == "block":
        reason = said.get("reason")
        return Outcome(hook, "block", clipped(reason if isinstance(reason, str) else "") or "no reason given",
                       context)
    return Outcome(hook, "ok", context=context)


def failure(hook: Hook, why: str) -> Outcome:
    """A hook that could not say: a warning, or a block when it was configured to fail closed."""
    if hook.on_error == "block":
        return Outcome(hook, "block", f"the hook failed ({why}) and on_error is \"block\"")
    return Outcome(hook, "failed", why)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the hook's process group: the guard, the shell and whatever they started."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
