"""The context size in force for a run: the flag or config, else what the server says, else 16384.

Resolved once per run, before the first request. `--ctx-size auto` (the default) asks the server
(client/probe.py) and keeps the answer in `$LOOP_HOME/servers.json`, so a warm run sends nothing.
A kept answer is asked again after a day: a server's window changes only when it is restarted with
another setting, which is rare enough that a day of staleness costs less than a probe per run,
yet a restart with a bigger `-c` is picked up without the user clearing a cache. A server that
answered nothing is remembered the same way, so it is not asked four questions on every run.

Small windows get a compact system prompt (under 4096 tokens, prompt.py) and a reply budget that
leaves the prompt room (`reply_budget`): with half of a 2048-token window for the
reply, loop's ~1,300-token system prompt and tool specs would not fit at all. The `Window` this module
returns says, as facts, where the size came from and what run/record.py tells the user once the session
is open; nothing downstream reads a label back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from loopagent.config import Config, Settings
    from loopagent.run.build import Host

Origin = Literal["flag", "env", "project", "user", "server", "default"]
KEPT = "kept in servers.json"

DEFAULT_CTX = 16384
SMALL_WINDOW = 4096  # below this the system prompt is the compact one (and the reply less than half)
PROMPT_FLOOR = 2048  # tokens the prompt keeps of a small window before the reply gets more than a quarter
MAX_AGE = 24 * 3600  # seconds a kept answer is used without asking the server again
PROBE_TIMEOUT = 1.5  # per request: a local server answers in milliseconds; a silent one costs this once


@dataclass(frozen=True)
class Window:
    """The context size in force, where it came from, and what there is to say about it."""

    size: int
    origin: Origin
    where: str = ""  # the config's own label, the endpoint that answered, or why the default was assumed
    kept: bool = False  # the server's answer (or silence) as kept in servers.json: told when it was learned

    @property
    def source(self) -> str:
        """What the `session` event names: flag, config, server or default."""
        return "config" if self.origin in ("env", "project", "user") else self.origin

    @property
    def label(self) -> str:
        """The size's origin as a person reads it (an error message, `loop config`)."""
        if self.origin in ("server", "default") and self.where:
            return f"{self.origin} ({self.where}{', ' + KEPT if self.kept else ''})"
        return self.where or self.origin

    def notes(self, settings: Settings) -> list[str]:
        """What to tell the user about the window once the session is open (run/record.py emits them)."""
        out = []
        if not self.kept and self.where and self.origin == "server":
            out.append(f"context size {settings.ctx_size:,} tokens, from {self.where}")
        elif not self.kept and self.where and self.origin == "default":
            out.append(f"context size {settings.ctx_size:,} tokens assumed: {self.where}")
        if settings.ctx_size < SMALL_WINDOW:  # also where reply_budget leaves the reply less than half
            out.append(f"small context window ({settings.ctx_size:,} tokens): a compact system prompt, and replies "
                       f"capped at {settings.max_tokens:,} tokens so prompt and reply fit")
        return out


@dataclass(frozen=True)
class Fitted:
    """What `fit` resolved: the settings in force (ctx_size a number, max_tokens within the window), the
    window with its origin, and max_tokens as configured before it was capped."""

    settings: Settings
    window: Window
    asked_max_tokens: int


def reply_budget(ctx_size: int, max_tokens: int) -> int:
    """max_tokens for a window: as configured, but never more than half the window, and in a small
    window less, so the prompt keeps three quarters of it or 2,048 tokens (loop's prompt and tool
    specs take ~1,300), whichever is less; at least 256. From 4096 up that is half, as the context
    manager always reserved; growing the window never shrinks the prompt's share."""
    return min(max_tokens, ctx_size // 2, max(256, ctx_size // 4, ctx_size - PROMPT_FLOOR))


def resolve(config: Config, host: Host, replay: bool = False) -> Window:
    """The size in force for `config` (asking the server only when ctx_size is auto and not replaying)."""
    settings = config.settings
    if settings.ctx_size != "auto":
        origin = config.origins.get("ctx_size", "default")
        return Window(settings.ctx_size, origin, config.sources.get("ctx_size", "default") if origin != "default" else "")
    if replay:  # a recording has no server to ask
        return Window(DEFAULT_CTX, "default")
    from loopagent.client.refusal import SOURCE as REFUSAL
    from loopagent.render.safe import printable
    from loopagent.servers import ServerBook, server_key

    provider = getattr(settings, "provider", "openai") or "openai"
    # A corrupt file is said here (the write below replaces it); a failed write is not: it costs a probe
    # next run, and the client says it if it learns something it cannot keep.
    book = ServerBook(host.home, lambda text: print(f"loop: warning: {printable(text)}", file=host.err),
                      warn_writes=False)
    key = server_key(provider, settings.base_url, settings.model)
    known = book.get(key)
    if known.ctx_source is not None and _fresh(known.ctx_learned):
        if known.ctx_size:
            return Window(known.ctx_size, "server", known.ctx_source, kept=True)
        return Window(DEFAULT_CTX, "default", "the server reports no context size", kept=True)
    size, source, reached = _ask(settings, host, provider)
    if not reached:  # nothing is learned from a server that is down: ask again next run
        return Window(DEFAULT_CTX, "default", f"{_public(settings.base_url)} did not answer; {_override}")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if not size and known.ctx_size and known.ctx_source == REFUSAL:
        # The server's own 400 stated its window and the endpoints still say nothing (llama-cpp-python):
        # that statement stays true until an endpoint says otherwise, so a day does not forget it.
        book.update(key, ctx_learned=stamp)
        return Window(known.ctx_size, "server", REFUSAL, kept=True)
    book.update(key, ctx_size=size, ctx_source=source, ctx_learned=stamp)
    if size:
        return Window(size, "server", f"{source} at {_where(settings.base_url, source)}")
    return Window(DEFAULT_CTX, "default", f"the server at {_public(settings.base_url)} reports no context size "
                                          f"at /props, /v1/models, /api/v0/models or /api/show; {_override}")


_override = "set --ctx-size or ctx_size to the server's window"


def _ask(settings, host: Host, provider: str) -> tuple[int | None, str, bool]:
    from loopagent.client.http import connect
    from loopagent.client.probe import probe

    headers = {"Authorization": f"Bearer {settings.api_key.get_secret_value()}"} if settings.api_key else {}
    with connect(settings.base_url, transport=host.transport, headers=headers, follow_redirects=False) as http:
        return probe(http, settings.base_url, settings.model, provider, PROBE_TIMEOUT)


def _fresh(learned: str | None) -> bool:
    if not learned:
        return False
    import calendar

    try:
        then = calendar.timegm(time.strptime(learned, "%Y-%m-%dT%H:%M:%SZ"))
    except (ValueError, OverflowError):
        return False
    return 0 <= time.time() - then < MAX_AGE


def _public(url: str) -> str:
    from loopagent.secrets import public_url

    return public_url(url) or url


def _where(base_url: str, source: str) -> str:
    """The URL of the endpoint that answered (its path is the label's last word)."""
    from loopagent.client.probe import api_root

    if source.endswith("/v1/models"):  # the model list lives under the base URL itself
        return _public(f"{base_url.rstrip('/')}/models")
    return _public(api_root(base_url) + source.rsplit(" ", 1)[-1])


def fit(config: Config, host: Host, replay: bool = False) -> Fitted:
    """The size in force for `config`, and the settings with it and a reply budget that fits it; `config`
    itself is left as loaded."""
    window = resolve(config, host, replay)
    settings = config.settings
    budget = reply_budget(window.size, settings.max_tokens)
    return Fitted(settings.model_copy(update={"ctx_size": window.size, "max_tokens": budget}), window,
                  settings.max_tokens)
