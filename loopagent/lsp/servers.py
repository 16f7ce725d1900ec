"""Which language server a file gets: the user's `lsp` setting, else a known server found on PATH.

`lsp` (user file only; a project file may only turn it off) is false, or maps a language id or a
file extension to `{"command": [...]}` (or false, for none). Without an entry a language gets the
first of its known servers that PATH has.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# extension -> (server key: one server per key and workspace, the document's LSP language id)
LANGUAGES = {
    ".py": ("python", "python"), ".pyi": ("python", "python"),
    ".ts": ("typescript", "typescript"), ".mts": ("typescript", "typescript"),
    ".cts": ("typescript", "typescript"), ".tsx": ("typescript", "typescriptreact"),
    ".js": ("typescript", "javascript"), ".mjs": ("typescript", "javascript"),
    ".cjs": ("typescript", "javascript"), ".jsx": ("typescript", "javascriptreact"),
    ".go": ("go", "go"), ".rs": ("rust", "rust"),
}
# Tried in this order, the first found on PATH is used.
KNOWN = {
    "python": (["basedpyright-langserver", "--stdio"], ["pyright-langserver", "--stdio"], ["pylsp"]),
    "typescript": (["typescript-language-server", "--stdio"],),
    "go": (["gopls"],),
    "rust": (["rust-analyzer"],),
}


@dataclass(frozen=True)
class Choice:
    """The server for one language: its key, the command as configured, where it came from."""

    key: str
    command: tuple[str, ...]
    origin: str  # "lsp setting" or "found on PATH"


@dataclass(frozen=True)
class Document:
    """What a file is to a server: the server's key and the file's language id."""

    key: str
    language_id: str


def check_lsp(value: Any) -> Any:
    """Validate the `lsp` setting (a config validator): true, false, or {language or .ext: entry}."""
    if isinstance(value, bool) or not isinstance(value, dict):
        return value  # pydantic says what is wrong with a non-object
    for name, entry in value.items():
        if entry is False:
            continue
        command = entry.get("command") if isinstance(entry, dict) else None
        if (not isinstance(command, list) or not command or not all(isinstance(w, str) and w for w in command)):
            raise ValueError(f'{name}: give {{"command": ["program", "arg", ...]}} or false')
        if "/" in command[0] and not os.path.isabs(command[0]):  # it would name a file of the workspace
            raise ValueError(f"{name}: the program must be a name on PATH or an absolute path")
        unknown = set(entry) - {"command", "language_id"}
        if unknown:
            raise ValueError(f"{name}: unknown key {sorted(unknown)[0]!r} (known: command, language_id)")
    return value


def document_of(path: str, setting: Mapping[str, Any]) -> Document | None:
    """The server key and language id of a file, by its extension; None: no language we know."""
    ext = os.path.splitext(path)[1].lower()
    if ext in LANGUAGES:
        return Document(*LANGUAGES[ext])
    entry = setting.get(ext)
    if isinstance(entry, dict):  # an extension only the user's setting knows
        return Document(ext, entry.get("language_id") or ext[1:])
    return None


def choose(doc: Document, ext: str, setting: Mapping[str, Any], path_env: str) -> Choice | None:
    """The server for `doc` (a file with extension `ext`): the user's entry for the extension, the
    language id or the server key, else the first known server on PATH; None when the user turned it
    off or none is found."""
    for name in (ext, doc.language_id, doc.key):
        if name and name in setting:
            entry = setting[name]
            return Choice(doc.key, tuple(entry["command"]), "lsp setting") if entry else None
    for command in KNOWN.get(doc.key, ()):
        if which(command[0], path_env):
            return Choice(doc.key, tuple(command), "found on PATH")
    return None


def lsp_rows(setting: Any, path_env: str) -> list[tuple[str, str, str]]:
    """`loop doctor`'s rows: ("lsp LANGUAGE", the command or "-", where it comes from or why none),
    for each known language and each extension only the setting names."""
    if setting is False:
        return [("lsp", "off", "the lsp setting is false")]
    entries = setting if isinstance(setting, dict) else {}
    rows = []
    for key in dict.fromkeys([*KNOWN, *(k for k in entries if k.startswith("."))]):
        entry = entries.get(key)
        doc = Document(key, (entry.get("language_id") if isinstance(entry, dict) else None) or key.lstrip("."))
        found = choose(doc, "" if key in KNOWN else key, entries, path_env)
        if found is None:
            off = entries.get(key) is False
            rows.append((f"lsp {key}", "-", "off in the lsp setting" if off else "no known server on PATH"))
        elif which(found.command[0], path_env) is None:
            rows.append((f"lsp {key}", "-", f"{found.command[0]} not found ({found.origin})"))
        else:
            rows.append((f"lsp {key}", " ".join(found.command), found.origin))
    return rows


def which(program: str, path_env: str) -> str | None:
    """`program` on PATH without its empty and relative entries: they name the working directory,
    which may be the workspace (a planted ./pylsp)."""
    from loopagent.spawn import absolute_path

    return shutil.which(program, path=absolute_path(path_env))
