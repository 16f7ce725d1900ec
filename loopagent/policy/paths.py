"""Path arithmetic for the policy: strings only, never the file system."""

from __future__ import annotations

import posixpath
import re

HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty"})
# Writing these changes what later commands run (git hooks, git's config, loop's own config).
PROTECTED = (".git/config", ".git/hooks", ".loop")


def resolve(path: str, cwd: str | None) -> str | None:
    """Absolute form of `path` as bash in `cwd` sees it; None when it depends on the environment."""
    if path.startswith(("~", "$")) or "$(" in path or "`" in path:
        return None
    if path.startswith("/"):
        return clean(path)
    return None if cwd is None else posixpath.normpath(posixpath.join(cwd, path))


def clean(path: str) -> str:
    """normpath, also collapsing a leading `//`."""
    return posixpath.normpath(re.sub(r"^/+", "/", path)) if path.startswith("/") else posixpath.normpath(path)


def inside(path: str, root: str) -> bool:
    """Is `path` the directory `root` or below it?"""
    return path == root or path.startswith(root.rstrip("/") + "/")


def relative(path: str, root: str) -> str:
    """A tool's path argument as a rule sees it: workspace-relative when inside, normalised."""
    path = clean(path) if path.startswith("/") else posixpath.normpath(path)
    if path.startswith("/") and inside(path, root):
        path = posixpath.relpath(path, root)
    return path.removeprefix("./")


def protected(path: str, root: str) -> str | None:
    """The protected place `path` (absolute) lies in, or None."""
    for place in PROTECTED:
        if inside(path, posixpath.join(root, place)):
            return place
    return None


def is_harmless_device(path: str) -> bool:
    path = clean(path) if path.startswith("/") else path
    return path in HARMLESS_DEVICES or path.startswith("/dev/fd/")


def strip_glob(path: str) -> str:
    """`dir/*` removes what `dir` holds, so judge `dir`; `*` alone is `.`."""
    parts = path.split("/")
    while len(parts) > 1 and (parts[-1] in ("", ".") or any(ch in parts[-1] for ch in "*?[")):
        parts.pop()
    if parts == [""]:
        return "/"
    if len(parts) == 1 and any(ch in parts[0] for ch in "*?["):
        return "."
    return "/".join(parts)


BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")
MAX_BRACE_WORDS = 256  # `{a,b}{c,d}...` doubles per group; judging the first ones is enough to deny


def braces(word: str) -> list[str]:
    """Brace expansion of `{a,b}` groups, enough to see `{/,x}` as `/` and `x`."""
    words, done = [word], []
    while words and len(done) < MAX_BRACE_WORDS:
        w = words.pop(0)
        m = BRACE.search(w)
        if not m:
            done.append(w)
            continue
        words[:0] = [w[:m.start()] + alt + w[m.end():] for alt in m.group(1).split(",")]
    return done


def has_braces(word: str) -> bool:
    """Does bash brace-expand this word (`{a,b}` or `{1..3}`)?"""
    return bool(BRACE.search(word) or re.search(r"\{[^{}]*\.\.[^{}]*\}", word))
