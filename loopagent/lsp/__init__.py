"""Language-server diagnostics after edits: framing.py (the wire), client.py (one server),
servers.py (which server a file gets), diagnostics.py (what an edit broke), hub.py (the run's
servers). A run builds a Diagnoser; nothing more is imported, found or started before the first
edit of a file whose language has a server.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


class Diagnoser:
    """The file tools' `diagnose` (ToolContext): the run's Hub, made at the first edit it concerns."""

    def __init__(self, root: Path, setting: Any, env: Mapping[str, str], environ: Mapping[str, str],
                 timeout: float, warnings: bool):
        self.root, self.env, self.environ = root, env, environ
        self.setting = setting if isinstance(setting, dict) else {}
        self.timeout, self.warnings = timeout, warnings
        self.hub: Any = None

    def __call__(self, change: Any, ctx: Any) -> str:
        """What `change` (a files.Change on disk) broke, as the block the model reads; "" for nothing."""
        from loopagent.lsp.servers import document_of

        if document_of(str(change.path), self.setting) is None:
            return ""
        if self.hub is None:
            from loopagent.lsp.hub import Hub

            self.hub = Hub(self.root, self.setting, self.env, self.environ, self.timeout, self.warnings)
        return self.hub.diagnose(change.path, change.rel, change.old, change.new, ctx.cancel.is_set, ctx.warn)

    def close(self) -> None:
        """Shut down the servers this run started."""
        if self.hub is not None:
            self.hub.close()
