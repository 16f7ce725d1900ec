"""Tab completion at the REPL prompt: slash commands, their arguments, and `@path` attachments.

Paths honour .gitignore the way list_files does (tools/search.py's rules): what git ignores is
not offered, so `@` does not drown the project in build output.

Tab with exactly one candidate inserts it at once (prompt-toolkit's own Tab first opens a menu
when completions are shown while typing, so a single candidate took two presses).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

# Loaded with the REPL, not at the first Tab (tools/ignore.py imports it lazily for one-shot runs): a
# completion that pays an import while keys keep arriving is dropped by prompt-toolkit as stale.
import pathspec  # noqa: F401
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.key_binding import KeyBindings

MAX_PATHS = 200  # a huge directory must not stall the prompt


class ReplCompleter(Completer):
    """Commands after `/` (`/skill:NAME` among them), the values of `/approval` and `/model`, workspace paths
    after `@`, skill names after `$`."""

    def __init__(self, commands: dict[str, str], workspace: Path | None = None,
                 arguments: dict[str, Callable[[], Iterable[str]]] | None = None, skills: dict[str, str] | None = None):
        self.commands = commands  # name -> help
        self.workspace = workspace
        self.arguments = arguments or {}  # command -> its possible values, asked when completing
        self.skills = skills or {}  # name -> description: `$NAME` loads it with the message

    def get_completions(self, document, complete_event) -> Iterator[Completion]:
        text = document.text_before_cursor
        if text.startswith("/") and " " not in text:
            for name, help_text in self.commands.items():
                if name.startswith(text):
                    yield Completion(name, start_position=-len(text), display_meta=help_text)
            return
        name, space, arg = text.partition(" ")
        if space and name in self.arguments and " " not in arg:
            for value in dict.fromkeys(self.arguments[name]()):  # in order, once each
                if value.startswith(arg) and value != arg:
                    yield Completion(value, start_position=-len(arg))
            return
        word = text.rsplit(None, 1)[-1] if text.strip() and not text[-1].isspace() else ""
        if word.startswith("@") and self.workspace is not None:
            yield from self.paths(word[1:])
        elif word.startswith("$"):
            for name, description in self.skills.items():
                if name.startswith(word[1:]) and name != word[1:]:
                    yield Completion("$" + name, start_position=-len(word), display_meta=description[:60])

    def paths(self, partial: str) -> Iterator[Completion]:
        """Entries of the workspace directory `partial` names, directories ending in `/`."""
        typed, _, stem = partial.rpartition("/")
        folder = None if partial.startswith("/") else self.folder_in(typed)
        if folder is None:
            return
        try:
            with os.scandir(self.workspace / folder if folder else self.workspace) as entries:
                names = sorted((e.name + ("/" if e.is_dir() else "")) for e in entries)
        except OSError:
            return
        keep = self.not_ignored(folder)
        shown = 0
        for name in names:
            if name.startswith(stem) and (stem.startswith(".") or not name.startswith(".")) and name != ".git/" \
                    and keep(f"{folder}/{name}" if folder else name):
                yield Completion(name, start_position=-len(stem))
                shown += 1
                if shown >= MAX_PATHS:
                    return


    def folder_in(self, typed: str) -> str | None:
        """`typed` as a clean workspace-relative folder ("" for the root); None when it leaves the
        workspace (`..`, a link to elsewhere) or enters `.git`: nothing is offered there.
        Normalised, so `./` and `src//` meet the same .gitignore rules as the plain spelling."""
        if not typed:
            return ""
        folder = posixpath.normpath(typed)
        if folder == ".." or folder.startswith("../"):
            return None
        folder = "" if folder == "." else folder
        if folder.split("/", 1)[0] == ".git":
            return None
        root = os.path.realpath(self.workspace)
        real = os.path.realpath(os.path.join(root, folder))
        return folder if real == root or real.startswith(root + os.sep) else None

    def not_ignored(self, folder: str) -> Callable[[str], bool]:
        """A test of workspace-relative paths in `folder`: False for what .gitignore excludes."""
        from loopagent.tools.ignore import ignore_lines, ignored, inherited_lines, spec

        root = self.workspace
        folder = folder.strip("/")
        specs = (spec(inherited_lines(root, folder)), spec(ignore_lines(root, folder)))
        return lambda rel: not ignored(specs, rel)


def add_tab(kb: KeyBindings) -> None:
    """Tab: a single candidate is inserted at once; several show the menu and step through it."""

    @kb.add("tab")
    def _tab(event) -> None:
        buf = event.current_buffer
        state = buf.complete_state
        if state is not None and state.complete_index is None:  # the menu typing opened, nothing picked
            found = list(state.completions)
        elif state is None and buf.completer is not None:
            found = list(buf.completer.get_completions(buf.document, CompleteEvent(completion_requested=True)))
        else:
            found = []
        if len(found) == 1:
            buf.apply_completion(found[0])
            return
        if buf.complete_state:
            buf.complete_next()
        else:
            buf.start_completion(insert_common_part=True)


_MODELS: dict[str, list[str]] = {}  # base URL -> the model names its server listed (asked once per process)


def server_models(base_url: str, api_key: str = "") -> list[str]:
    """The model names `GET {base_url}/models` lists; [] when the server does not answer quickly."""
    if base_url not in _MODELS:
        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        try:
            data = httpx.get(base_url.rstrip("/") + "/models", headers=headers, timeout=1.0).json()
            _MODELS[base_url] = [str(m["id"]) for m in data.get("data", []) if isinstance(m, dict) and "id" in m]
        except (httpx.HTTPError, ValueError, AttributeError, TypeError):
            _MODELS[base_url] = []
    return _MODELS[base_url]
