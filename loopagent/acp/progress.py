"""A `task` call's child at work, shown as updates of that call: its content says the child's step and latest
call ("step 3, 2 calls · read_file src/x.py"), as the terminal's line under the parent's turn does.

A busy child makes many calls a second; the client gets at most one update per call each `every` seconds,
and the latest state always arrives (a timer sends what came in between). Once the child has ended nothing
more is sent for it: the call's result, its last update, follows (feed.py `Feed.finished`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp import schema

from loopagent.acp.feed import text_content


@dataclass
class Paced:
    """One child's updates: where they go, the latest text, when one was last sent, the pending timer."""

    acp_id: str
    text: str = ""
    sent: float = float("-inf")
    timer: threading.Timer | None = None


class ChildProgress:
    """The `watch` of run/child.py `Children`: (the model's id of the task call, its child's state; None once
    the child ended). `task_call` gives the ACP id of a running task call (None: not one the client was shown)."""

    def __init__(self, post: Callable[[Any], None], task_call: Callable[[str], str | None], every: float = 0.3):
        self.post, self.task_call, self.every = post, task_call, every
        self.lock = threading.Lock()  # parallel children, and timers, post in the order they decide
        self.children: dict[str, Paced] = {}

    def __call__(self, call_id: str, text: str | None) -> None:
        with self.lock:
            paced = self.children.get(call_id)
            if text is None:  # ended (answered, failed or cancelled): a pending update is dropped
                if paced is not None:
                    del self.children[call_id]
                    if paced.timer is not None:
                        paced.timer.cancel()
                return
            if paced is None:
                acp_id = self.task_call(call_id)
                if acp_id is None:
                    return
                paced = self.children[call_id] = Paced(acp_id)
            paced.text = text
            wait = paced.sent + self.every - time.monotonic()
            if wait <= 0:
                self.send(paced)
            elif paced.timer is None:
                paced.timer = threading.Timer(wait, self.later, (call_id, paced))
                paced.timer.daemon = True
                paced.timer.start()

    def later(self, call_id: str, paced: Paced) -> None:
        with self.lock:
            if self.children.get(call_id) is paced:  # not ended meanwhile
                paced.timer = None
                self.send(paced)

    def send(self, paced: Paced) -> None:
        paced.sent = time.monotonic()
        self.post(schema.ToolCallProgress(session_update="tool_call_update", tool_call_id=paced.acp_id,
                                          status="in_progress", content=[text_content(paced.text)]))
