"""What `loop --install-completion` offers after a flag: approval modes, export formats, session ids.

A shell asks on every Tab, so this module imports nothing of loop's own: session ids are the file
names in the workspace's session directory, read without opening a file (tests hold the directory
name to loopagent.session.catalog and the modes to loopagent.policy).
"""

import hashlib
import os
import re
from pathlib import Path

import typer

APPROVAL_MODES = (("ask", "ask before every edit and command"), ("edits", "edits run; commands ask"),
                  ("all", "everything runs (shell commands sandboxed)"),
                  ("plan", "read and run, change nothing (workspace read-only)"))
FORMATS = (("md", "Markdown"), ("html", "one self-contained HTML file"))
MAX_SESSIONS = 50  # newest first; more only slows the shell


def approval_modes(incomplete: str) -> list[tuple[str, str]]:
    return [(mode, why) for mode, why in APPROVAL_MODES if mode.startswith(incomplete.lower())]


def export_formats(incomplete: str) -> list[tuple[str, str]]:
    return [(fmt, why) for fmt, why in FORMATS if fmt.startswith(incomplete.lower())]


def session_dir(workspace: Path, environ: dict | None = None) -> Path:
    """`$LOOP_HOME/sessions/<workspace key>`, as loopagent.session.catalog.sessions_dir names it."""
    env = os.environ if environ is None else environ
    home = Path(env.get("LOOP_HOME") or Path.home() / ".loop")
    real = os.path.realpath(workspace)
    slug = re.sub(r"[^a-z0-9]+", "-", Path(real).name.lower()).strip("-")[:40] or "root"
    return home / "sessions" / f"{slug}-{hashlib.sha256(real.encode()).hexdigest()[:8]}"


def session_ids(ctx: typer.Context, incomplete: str) -> list[str]:
    """`last` and the ids of the workspace's sessions (`-C DIR` when typed before), newest first."""
    from loopagent.cli.workspace import find_workspace

    given = ctx.params.get("workspace")
    workspace, _ = find_workspace(Path(given) if given else None, Path.cwd())
    try:
        names = [e.name[:-6] for e in os.scandir(session_dir(workspace)) if e.name.endswith(".jsonl")]
    except OSError:
        names = []
    names.sort(reverse=True)  # ids begin with their UTC time
    return [name for name in ["last", *names[:MAX_SESSIONS]] if name.startswith(incomplete)]
