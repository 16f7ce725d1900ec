"""Which files exist for the search tools: every `.gitignore` inside the workspace plus
`.git/info/exclude`, as git reads them (nothing above the workspace root, no global excludes).

pathspec is imported when a search first needs a rule, not at every start (~11 ms).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec


def rooted_patterns(lines: list[str], base: str) -> list[str]:
    """Rewrite .gitignore lines of directory `base` (workspace-relative) as workspace-relative patterns."""
    out = []
    for raw in lines:
        line = raw.rstrip("\n").rstrip("\r")
        if not line.strip() or line.startswith("#"):
            continue
        neg, body = ("!", line[1:]) if line.startswith("!") else ("", line)
        if base:
            anchored = "/" in body.rstrip("/")
            body = f"{base}/{body.lstrip('/')}" if anchored else f"{base}/**/{body}"
        out.append(neg + body)
    return out


def ignore_lines(root: Path, rel_dir: str) -> list[str]:
    """The rooted patterns of `rel_dir/.gitignore`, or [] when it has none."""
    try:
        text = (root / rel_dir / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return rooted_patterns(text.splitlines(), rel_dir)


def inherited_lines(root: Path, start: str) -> list[str]:
    """Patterns that apply at `start` from above it: .git/info/exclude, then each parent's .gitignore."""
    try:
        lines = rooted_patterns((root / ".git/info/exclude").read_text(errors="replace").splitlines(), "")
    except OSError:
        lines = []
    if start in ("", "."):
        return lines
    parts = start.split("/")
    for depth in range(len(parts)):
        lines += ignore_lines(root, "/".join(parts[:depth]))
    return lines


def spec(lines: list[str]) -> pathspec.GitIgnoreSpec:
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def ignored(specs: tuple[pathspec.GitIgnoreSpec, ...], rel: str) -> bool:
    """Git's rule: the deepest .gitignore with a matching pattern decides; within it the last pattern."""
    for s in reversed(specs):
        result = s.check_file(rel)
        if result.include is not None:
            return bool(result.include)
    return False
