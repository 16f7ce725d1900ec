"""A real pseudo-terminal for tests: `loop` on a pty (pexpect) that answers cursor-position requests."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect

from tests.conftest import clean_env

CPR = r"\x1b\[6n"  # prompt-toolkit asks where the cursor is; a terminal answers
TOOLBAR = r"approval \w+ · context \S+/16k"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal:
    """A child process on a pty that answers cursor-position requests like a real terminal."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path, python: str = sys.executable,
                 dimensions: tuple[int, int] = (40, 120)):
        self.child = pexpect.spawn(python, ["-m", "loopagent", *args], env=env, cwd=str(cwd),
                                   encoding="utf-8", timeout=20, dimensions=dimensions)
        self.seen = ""

    def expect(self, pattern: str, timeout: float = 20) -> str:
        """Wait for `pattern` (a regex); returns the text that came before it, escape codes removed."""
        before = ""
        while True:
            index = self.child.expect([CPR, pattern], timeout=timeout)
            before += self.child.before
            if index == 0:
                self.child.send("\x1b[1;1R")
                continue
            self.seen += before + self.child.after
            return ANSI.sub("", before)

    def prompt(self) -> str:
        """Wait until the prompt is ready for input (its toolbar is drawn)."""
        return self.expect(TOOLBAR)

    def line(self, text: str) -> None:
        self.child.send(text + "\r")

    def exit_code(self, timeout: float = 20) -> int:
        self.child.expect(pexpect.EOF, timeout=timeout)
        self.child.close()
        return self.child.exitstatus if self.child.exitstatus is not None else 128 + self.child.signalstatus


def terminals(server, ws: Path, loop_home: Path) -> Iterator[Callable[..., Terminal]]:
    """A fixture body: `start(*args, python=, color=, wait_prompt=)` runs `loop agent -C ws --base-url …`
    on a pty; every terminal started is closed afterwards."""
    started: list[Terminal] = []

    def start(*args: str, python: str = sys.executable, color: bool = False, wait_prompt: bool = False) -> Terminal:
        env = clean_env(loop_home)
        env.update(TERM="xterm", COLUMNS="120", LINES="40")
        if color:
            env.pop("NO_COLOR", None)
        t = Terminal(["agent", "-C", str(ws), "--base-url", server.url, *args], env, ws, python=python)
        started.append(t)
        if wait_prompt:
            t.prompt()
        return t

    yield start
    for t in started:
        t.child.close(force=True)
