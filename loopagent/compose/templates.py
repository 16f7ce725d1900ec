"""Prompt templates: `$LOOP_HOME/prompts/NAME.md` and `<workspace>/.loop/prompts/NAME.md` as `/NAME args`.

A template is text only: what `/NAME args` sends is the file's text with `$ARGUMENTS` (all the
arguments) and `$1`..`$9` (each, split as a shell would) put in; it is a message, so a project's
template can never change a setting, a permission or a rule. The user's template of a name wins over
the project's (a repository must not change what the user's own command says); neither may take the
name of a built-in command.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9])")
FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)
MAX_BYTES = 100_000  # a template is a message; a huge file is no template


@dataclass(frozen=True)
class Template:
    name: str  # with its slash: "/review"
    path: Path
    origin: str  # "user" or "project"

    @property
    def help(self) -> str:
        """The template's first line (what /help and Tab show), with where it comes from."""
        try:
            meta, body = front_matter(self.raw())
        except OSError:
            meta, body = {}, ""
        first = meta.get("description") or next((line.strip() for line in body.splitlines() if line.strip()), "")
        return f"{first[:60]} ({self.origin} template)".lstrip()

    def raw(self) -> str:
        with self.path.open("rb") as f:
            return f.read(MAX_BYTES).decode("utf-8", errors="replace")

    def text(self) -> str:
        """What the template sends: the file without its front matter."""
        return front_matter(self.raw())[1]


def front_matter(raw: str) -> tuple[dict[str, str], str]:
    """A leading `---` block of `key: value` lines (as in other agents' command files, whose
    `description` is the help line) and the rest; the block is never sent to the model."""
    match = FRONT.match(raw)
    if match is None:
        return {}, raw
    meta = {}
    for line in match.group(1).splitlines():
        key, colon, value = line.partition(":")
        if colon:
            meta[key.strip().lower()] = value.strip().strip("'\"")
    return meta, raw[match.end():]


def templates(home: Path, workspace: Path | None, builtins: set[str]) -> dict[str, Template]:
    """The templates found, by command name; names of built-in commands are left out."""
    found: dict[str, Template] = {}
    folders = [(workspace / ".loop" / "prompts", "project")] if workspace is not None else []
    folders.append((home / "prompts", "user"))  # last: the user's replace the project's of the same name
    for folder, origin in folders:
        try:
            files = sorted(folder.glob("*.md"))
        except OSError:
            continue
        for path in files:
            name = "/" + path.stem
            if NAME.match(path.stem) and name not in builtins and path.is_file() \
                    and (origin == "user" or inside(path, workspace)):
                found[name] = Template(name, path, origin)
    return found


def inside(path: Path, workspace: Path | None) -> bool:
    """Whether `path`, links resolved, stays in the workspace: a project's template linked to a file
    elsewhere (a key in ~/.ssh) must not send that file to the model."""
    root = os.path.realpath(workspace) if workspace is not None else None
    return root is not None and os.path.realpath(path).startswith(root + os.sep)


def expand(text: str, arguments: str) -> str:
    """`text` with `$ARGUMENTS` and `$1`..`$9` substituted (a missing argument becomes nothing)."""
    try:
        words = shlex.split(arguments)
    except ValueError:  # an unbalanced quote: split on white space instead
        words = arguments.split()

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "ARGUMENTS":
            return arguments
        n = int(key)
        return words[n - 1] if n <= len(words) else ""

    return PLACEHOLDER.sub(value, text)
