"""The approval display: what a call would do before `allow? [y/N/a]` (the exact command, or the
diff of the edit), and a whole diff on request (the REPL's /diff).

A mixin of `TerminalRenderer`: it writes through the renderer's sink, so every string passes
`safe.printable` like the rest of the screen, in colour and in plain text alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from loopagent.messages import ToolCall
from loopagent.render.diff import summary
from loopagent.render.results import looks_like_diff
from loopagent.render.safe import printable

if TYPE_CHECKING:
    from loopagent.tools.spec import Effect, ToolSpec


class ApprovalView:
    """Approval prompts and diffs; remembers the diff each prompt showed, so the result line does not
    print it a second time (`approved_diffs`, call id -> diff)."""

    approved_diffs: dict[str, str]
    sink: Any
    # The tools' specs by name (default: the built-in tools): a call is shown by what its tool does.
    tools: Mapping[str, ToolSpec] | None = None

    def effect_of(self, name: str) -> Effect:
        """What the named tool does; one the renderer does not know acts outside the workspace."""
        if self.tools is None:
            from loopagent.tools import builtin_specs

            self.tools = {spec.name: spec for spec in builtin_specs()}
        spec = self.tools.get(name)
        return spec.effect if spec is not None else "external"

    def show_diff(self, diff: str, head: str) -> None:
        """A whole diff (the REPL's /diff), folded only when very long."""
        self.close()
        self.sink.row(((printable(head), "bold"),), clip=False)
        self.sink.diff(diff, "  ", 400, True)

    def show_approval(self, call: ToolCall, subject: str, preview: str, reason: str, sandbox: str = "") -> None:
        """What a call would do, before `allow? [y/N/a]`: the exact command in full, or the diff of the edit.

        `sandbox` is one line for calls of an exec tool (the shell) saying where the command runs (e.g.
        "sandbox: workspace writable, no network" or "not sandboxed"); shown under the command.
        """
        self.close()
        preview = preview.rstrip("\n")
        command = self.effect_of(call.name) == "exec"
        diff = preview if looks_like_diff(preview) else ""
        if diff:
            self.approved_diffs[call.id] = diff
            head = f"      {printable(call.name)} would change {printable(subject)}  {summary(diff)}"
        elif command:  # every line of the command, as the policy judged it
            head = "      $ " + printable(preview).replace("\n", "\n        ")
        else:
            head = "" if preview == subject else "      " + printable(preview).replace("\n", "\n      ")
        where = f"      {printable(sandbox)}" if command and sandbox else ""
        for text, style in ((head, "bold"), (where, "")):
            if text:
                self.sink.row(((text, style),), clip=False)
        if diff:
            self.sink.diff(diff, "      ", 200)
        if reason:
            self.sink.row(((f"      needs approval: {printable(reason)}", "dim"),), clip=False)

    # Provided by the renderer.
    def close(self) -> None: ...
