"""The approval display: what a call would do before `allow? [y/N/a]` (the exact command, or the
diff of the edit), and a whole diff on request (the REPL's /diff).

A mixin of `TerminalRenderer`: it prints through the renderer's `print`/`line`/`write`, so every
string passes `safe.printable` like the rest of the screen.
"""

from __future__ import annotations

from rich.text import Text

from loopagent.messages import ToolCall
from loopagent.render import diff as diffs
from loopagent.render.results import looks_like_diff
from loopagent.render.safe import printable


class ApprovalView:
    """Approval prompts and diffs; remembers the diff each prompt showed, so the result line does not
    print it a second time (`approved_diffs`, call id -> diff)."""

    approved_diffs: dict[str, str]
    color: bool

    def show_diff(self, diff: str, head: str) -> None:
        """A whole diff (the REPL's /diff), folded only when very long."""
        self.close()
        head = printable(head)
        if self.color:
            self.print(Text(head, style="bold"))
            self.print(diffs.coloured(diff, "  ", max_lines=400, headers=True))
        else:
            self.line(head)
            self.write(diffs.plain(diff, "  ", max_lines=400, headers=True))

    def show_approval(self, call: ToolCall, subject: str, preview: str, reason: str, sandbox: str = "") -> None:
        """What a call would do, before `allow? [y/N/a]`: the exact command in full, or the diff of the edit.

        `sandbox` is one line for shell calls saying where the command runs (e.g. "sandbox: workspace
        writable, no network" or "not sandboxed"); shown under the command.
        """
        self.close()
        preview = preview.rstrip("\n")
        diff = preview if looks_like_diff(preview) else ""
        if diff:
            self.approved_diffs[call.id] = diff
            head = f"      {printable(call.name)} would change {printable(subject)}  {diffs.summary(diff)}"
        elif call.name == "shell":  # every line of the command, as the policy judged it
            head = "      $ " + printable(preview).replace("\n", "\n        ")
        else:
            head = "" if preview == subject else "      " + printable(preview).replace("\n", "\n      ")
        where = f"      {printable(sandbox)}" if call.name == "shell" and sandbox else ""
        asks = f"      needs approval: {printable(reason)}" if reason else ""
        if not self.color:
            for text in (head, where):
                if text:
                    self.line(text)
            if diff:
                self.write(diffs.plain(diff, "      ", 200))
            if asks:
                self.line(asks)
            return
        for text, style in ((head, "bold"), (where, "")):
            if text:
                self.print(Text(text, style=style))
        if diff:
            self.print(diffs.coloured(diff, "      ", max_lines=200))
        if asks:
            self.print(Text(asks, style="dim"))

    # Provided by the renderer.
    def close(self) -> None: ...
    def print(self, view, **options) -> None: ...
    def line(self, text: str) -> None: ...
    def write(self, text: str) -> None: ...
