"""Slash commands about what the person sends: /init (an AGENTS.md drafted by the model) and /edit (an
external editor)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopagent.messages import AssistantMessage, SystemMessage, ToolCall, UserMessage

if TYPE_CHECKING:
    from loopagent.cli.repl.state import ReplState

INIT_TASK = (
    "Write an AGENTS.md for this repository: the file a coding agent reads first. Explore it with the "
    "read-only tools (list_files, read_file, grep): the build files, the CI configuration, the README, "
    "the tests. Then answer with the whole content of AGENTS.md and nothing else (no preamble, no "
    "fence), in Markdown, with these sections: how to build, how to run the tests (a single test too), "
    "how to lint and format, the layout (what lives where), and the conventions the code follows. "
    "Name exact commands; leave out what you could not verify."
)
FENCE = re.compile(r"^\s*```[\w-]*\n(.*?)\n```\s*$", re.S)
YES = ("y", "yes")


def edit(repl: ReplState, arg: str, prompt: Any) -> None:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        repl.renderer.say("set $VISUAL or $EDITOR to the editor to use", "yellow")
        return
    with tempfile.TemporaryDirectory(prefix="loop-edit-") as folder:
        path = Path(folder) / "message.md"
        path.write_text(arg or repl.prefill, encoding="utf-8")
        try:
            code = subprocess.call([*shlex.split(editor), str(path)])
        except (OSError, ValueError) as exc:
            repl.renderer.say(f"error: cannot start the editor {editor!r}: {exc}", "red")
            return
        if code != 0:
            repl.renderer.say(f"the editor exited with code {code}; nothing changed", "yellow")
            return
        repl.prefill = path.read_text(encoding="utf-8", errors="replace").removesuffix("\n")


def init(repl: ReplState, arg: str, prompt: Any) -> None:
    from loopagent.render import diff as diffs
    from loopagent.tools.diffs import unified_diff

    ws = repl.agent.tools.workspace
    target = ws.resolve("AGENTS.md")
    old = ws.read_if_exists(target)
    if old is not None and repl.ask(prompt, "AGENTS.md exists; draft a new one to replace it? [y/N] ").lower() not in YES:
        repl.renderer.say("AGENTS.md kept")
        return
    text = draft(repl)
    if not text:  # None: the run stopped (cancelled, a limit, an error), its end line said why
        repl.renderer.say("no AGENTS.md written" if text is None else "no AGENTS.md: the model wrote nothing",
                          "yellow")
        return
    before = "" if old is None else old.decode("utf-8", errors="replace")
    change = unified_diff(before, text, "AGENTS.md")
    if not change.strip():
        repl.renderer.say("AGENTS.md would not change")
        return
    repl.renderer.show_diff(change, f"AGENTS.md {diffs.summary(change)}")
    if repl.ask(prompt, "write AGENTS.md? [y/N] ").lower() not in YES:
        repl.renderer.say("AGENTS.md not written")
        return
    call = ToolCall("init", "write_file", json.dumps({"path": "AGENTS.md"}))
    repl.agent.steering.before_change(call, "AGENTS.md")  # a checkpoint first: /undo takes it back
    ws.write_bytes(target, text.encode("utf-8"))
    ws.record_read(target, text.encode("utf-8"))
    repl.renderer.say("wrote AGENTS.md")


def draft(repl: ReplState) -> str | None:
    """The model's AGENTS.md: a run of its own with only the read-only tools, kept out of the conversation;
    None when that run did not complete."""
    from contextlib import nullcontext

    from loopagent.cancel import Cancel
    from loopagent.tools import Registry

    agent = repl.agent
    read_only = [t for t in agent.registry.tools.values() if t.spec().read_only is True]
    # The user's tool hooks still guard the calls; session_start is left for the conversation's first turn.
    helper = replace(agent, registry=Registry(read_only), listeners=(repl.renderer,),
                     steering=replace(agent.steering, approver=None, steer=lambda: []),
                     hooks=replace(agent.hooks, started=True))
    history = [*(m for m in repl.history[:1] if isinstance(m, SystemMessage)), UserMessage(INIT_TASK)]
    try:
        with repl.trap.turn() if repl.trap else nullcontext(Cancel()) as cancel:
            end = helper.run(history, INIT_TASK, cancel)
    finally:
        repl.renderer.close()
    replies = [m for m in history if isinstance(m, AssistantMessage)]
    if end.status != "completed":
        return None
    if not replies:
        return ""
    text = (replies[-1].text or "").strip()
    fenced = FENCE.match(text)
    return (fenced.group(1).strip() if fenced else text) + "\n" if text else ""
