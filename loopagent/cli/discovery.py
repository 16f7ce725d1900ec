"""The context size in force for a run: the flag or config, else what the server says, else 16384.

Resolved once per run, before the first request. `--ctx-size auto` (the default) asks the server
(client/probe.py) and keeps the answer in `$LOOP_HOME/servers.json`, so a warm run sends nothing.
A kept answer is asked again after a day: a server's window changes only when it is restarted with
another setting, which is rare enough that a day of staleness costs less than a probe per run,
yet a restart with a bigger `-c` is picked up without the user clearing a cache. A server that
answered nothing is remembered the same way, so it is not asked four questions on every run.

Small windows get a compact system prompt (under 4096 tokens, prompt.py) and a reply budget that
leaves the prompt room (`reply_budget`): with half of a 2048-token window for the
reply, loop's ~1,300-token system prompt and tool specs would not fit at all. The label this module writes into the config's sources tells cli/record.py what to say
about it once the session is open.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loopagent.cli.build import Host
    from loopagent.config import Config

DEFAULT_CTX = 16384
SMALL_WINDOW = 4096  # below this the system prompt is the compact one (and the reply less than half)
PROMPT_FLOOR = 2048  # tokens the prompt keeps of a small window before the reply gets more than a quarter
MAX_AGE = 24 * 3600  # seconds a kept answer is used without asking the server again
PROBE_TIMEOUT = 1.5  # per request: a local server answers in milliseconds; a silent one costs this once


@dataclass(frozen=True)
class Resolved:
    """The context size in force and where it came from (`label` goes into the config's sources)."""

    size: int
    label: str  # "server (llama.cpp /props at URL)", "default (...)", or the config's own label


def reply_budget(ctx_size: int, max_tokens: int) -> int:
    """max_tokens for a window: as configured, but never more than half the window, and in a small
    window less, so the prompt keeps three quarters of it or 2,048 tokens (loop's prompt and tool
    specs take ~1,300), whichever is less; at least 256. From 4096 up that is half, as the context
    manager always reserved; growing the window never shrinks the prompt's share."""
    return min(max_tokens, ctx_size // 2, max(256, ctx_size // 4, ctx_size - PROMPT_FLOOR))


def resolve(config: Config, host: Host, replay: bool = False) -> Resolved:
    """The size in force for `config` (asking the server only when ctx_size is auto and not replaying)."""
    settings = config.settings
    if settings.ctx_size != "auto":
        return Resolved(settings.ctx_size, config.sources.get("ctx_size", "default"))
    if replay:  # a recording has no server to ask
        return Resolved(DEFAULT_CTX, "default")
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
            return Resolved(known.ctx_size, f"server ({known.ctx_source}, kept in servers.json)")
        return Resolved(DEFAULT_CTX, "default (the server reports no context size, kept in servers.json)")
    size, source, reached = _ask(settings, host, provider)
    if not reached:  # nothing is learned from a server that is down: ask again next run
        return Resolved(DEFAULT_CTX, f"default ({_public(settings.base_url)} did not answer; {_override})")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if not size and known.ctx_size and known.ctx_source == REFUSAL:
        # The server's own 400 stated its window and the endpoints still say nothing (llama-cpp-python):
        # that statement stays true until an endpoint says otherwise, so a day does not forget it.
        book.update(key, ctx_learned=stamp)
        return Resolved(known.ctx_size, f"server ({REFUSAL}, kept in servers.json)")
    book.update(key, ctx_size=size, ctx_source=source, ctx_learned=stamp)
    if size:
        return Resolved(size, f"server ({source} at {_where(settings.base_url, source)})")
    return Resolved(DEFAULT_CTX, f"default (the server at {_public(settings.base_url)} reports no context size "
                                 f"at /props, /v1/models, /api/v0/models or /api/show; {_override})")


_override = "set --ctx-size or ctx_size to the server's window"


def _ask(settings, host: Host, provider: str) -> tuple[int | None, str, bool]:
    import httpx

    from loopagent.client.probe import probe

    headers = {"Authorization": f"Bearer {settings.api_key.get_secret_value()}"} if settings.api_key else {}
    with httpx.Client(transport=host.transport, headers=headers, follow_redirects=False) as http:
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


def apply(config: Config, host: Host, replay: bool = False):
    """Put the size in force (and a reply budget that fits it) into `config` with its source; the new settings."""
    resolved = resolve(config, host, replay)
    settings = config.settings
    budget = reply_budget(resolved.size, settings.max_tokens)
    config.settings = settings.model_copy(update={"ctx_size": resolved.size, "max_tokens": budget})
    config.sources["ctx_size"] = resolved.label
    if budget != settings.max_tokens:
        config.sources["max_tokens"] = f"capped to fit the context window (was {settings.max_tokens})"
    return config.settings


def notes(settings, label: str) -> list[str]:
    """What to tell the user about the window once the session is open (cli/record.py emits them)."""
    out = []
    fresh = "kept in servers.json" not in label  # a kept answer was told when it was learned
    if fresh and label.startswith("server ("):
        out.append(f"context size {settings.ctx_size:,} tokens, from {label[len('server ('):-1]}")
    elif fresh and label.startswith("default ("):
        out.append(f"context size {settings.ctx_size:,} tokens assumed: {label[len('default ('):-1]}")
    if settings.ctx_size < SMALL_WINDOW:  # also where reply_budget leaves the reply less than half
        out.append(f"small context window ({settings.ctx_size:,} tokens): a compact system prompt, and replies "
                   f"capped at {settings.max_tokens:,} tokens so prompt and reply fit")
    return out
