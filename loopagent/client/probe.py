"""Asking a model server how large its context window is (issue 13 item 4).

Each local server family says it somewhere different: llama.cpp at `/props`, vLLM in its model
list, LM Studio in its own model list, Ollama in `/api/show`. `probe_context` asks each in turn,
one short request per endpoint, and stops at the first believable answer. Server replies are
untrusted: a negative, huge, fractional or non-numeric size is ignored, never raised.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

# Below this no chat with tools fits; above it the number is a typo or a lie (2**24 tokens).
MIN_CTX, MAX_CTX = 256, 1 << 24


def sane_size(value: Any) -> int | None:
    """`value` as a context size, or None when it is not a believable one."""
    if isinstance(value, bool):  # True is an int in Python, not a size
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and MIN_CTX <= value <= MAX_CTX:
        return value
    return None


def api_root(base_url: str) -> str:
    """The server's root: the base URL without a trailing `/v1` (llama.cpp, LM Studio, Ollama live there)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def llamacpp_size(body: Any, model: str = "") -> int | None:
    """n_ctx from a llama.cpp `/props` body (the slot's setting, or top-level in some builds)."""
    if not isinstance(body, dict):
        return None
    settings = body.get("default_generation_settings")
    if isinstance(settings, dict) and sane_size(settings.get("n_ctx")):
        return sane_size(settings.get("n_ctx"))
    return sane_size(body.get("n_ctx"))


def _entry(items: Any, model: str) -> dict | None:
    """The entry of a model list naming `model`, else the only entry; None when neither."""
    if not isinstance(items, list):
        return None
    entries = [item for item in items if isinstance(item, dict)]
    for item in entries:
        if item.get("id") == model:
            return item
    return entries[0] if len(entries) == 1 else None


def vllm_size(body: Any, model: str = "") -> int | None:
    """max_model_len of `model` (or of the only model) from a vLLM `/v1/models` body."""
    entry = _entry(body.get("data") if isinstance(body, dict) else None, model)
    return sane_size(entry.get("max_model_len")) if entry else None


def lmstudio_size(body: Any, model: str = "") -> int | None:
    """The loaded context length (else the maximum) of `model` from LM Studio's `/api/v0/models`."""
    entry = _entry(body.get("data") if isinstance(body, dict) else None, model)
    if entry is None:
        return None
    return sane_size(entry.get("loaded_context_length")) or sane_size(entry.get("max_context_length"))


def ollama_size(body: Any, model: str = "", native: bool = True) -> int | None:
    """The context size from an Ollama `/api/show` body: a `num_ctx` parameter if set, else the model's length.

    The model's length counts only for the native provider, which sends `num_ctx` itself: Ollama's
    OpenAI endpoint runs at its own default window whatever the model could hold.
    """
    if not isinstance(body, dict):
        return None
    params = body.get("parameters")
    if isinstance(params, str):  # "num_ctx                        8192\nstop ..." one setting a line
        for line in params.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "num_ctx" and sane_size(parts[1]):
                return sane_size(parts[1])
    info = body.get("model_info")
    if not native or not isinstance(info, dict):
        return None
    arch = info.get("general.architecture")
    if isinstance(arch, str) and sane_size(info.get(f"{arch}.context_length")):
        return sane_size(info.get(f"{arch}.context_length"))
    lengths = [sane_size(v) for k, v in info.items() if isinstance(k, str) and k.endswith(".context_length")]
    lengths = [n for n in lengths if n]
    return lengths[0] if len(lengths) == 1 else None


Parser = Callable[[Any, str], "int | None"]


def _endpoints(base_url: str, model: str, provider: str) -> list[tuple[str, str, str, dict | None, Parser]]:
    """(label, method, url, json body, parser) in the order worth asking for `provider`."""
    root, base = api_root(base_url), base_url.rstrip("/")
    ollama = ("Ollama /api/show", "POST", f"{root}/api/show", {"model": model}, ollama_size)
    if provider == "ollama":
        return [ollama]
    ollama = (*ollama[:4], lambda body, name: ollama_size(body, name, native=False))
    return [
        ("llama.cpp /props", "GET", f"{root}/props", None, llamacpp_size),
        ("vLLM /v1/models", "GET", f"{base}/models", None, vllm_size),
        ("LM Studio /api/v0/models", "GET", f"{root}/api/v0/models", None, lmstudio_size),
        ollama,
    ]


GIVE_UP = object()  # the server cannot be reached or does not answer: asking its other endpoints is no use


def _ask(http: httpx.Client, method: str, url: str, body: dict | None, timeout: float) -> Any:
    """The JSON body of one short request; None on a refusal (status, not JSON); GIVE_UP when unreachable."""
    import httpx

    try:
        response = http.request(method, url, json=body, timeout=timeout)
        if response.status_code != 200 or len(response.content) > 4_000_000:
            return None
        return response.json()
    except (httpx.ConnectError, httpx.TimeoutException):
        return GIVE_UP
    except (httpx.HTTPError, ValueError, UnicodeDecodeError):
        return None


def probe_context(http: httpx.Client, base_url: str, model: str, provider: str = "openai",
                  timeout: float = 3.0) -> tuple[int | None, str]:
    """(the context size the server reports or None, the endpoint that said it or "")."""
    size, label, _ = probe(http, base_url, model, provider, timeout)
    return size, label


def probe(http: httpx.Client, base_url: str, model: str, provider: str = "openai",
          timeout: float = 3.0) -> tuple[int | None, str, bool]:
    """As `probe_context`, plus whether the server answered at all (an unreachable one says nothing lasting)."""
    reached = False
    for label, method, url, body, parse in _endpoints(base_url, model, provider):
        reply = _ask(http, method, url, body, timeout)
        if reply is GIVE_UP:
            break
        reached = True
        try:
            size = parse(reply, model) if reply is not None else None
        except (TypeError, AttributeError, ValueError, RecursionError):  # odd JSON must never crash a run
            size = None
        if size:
            return size, label, True
    return None, "", reached


# Who answers /v1/models, by the `owned_by` its entries carry (each server writes its own word there).
OWNERS = {"me": "llama-cpp-python", "llamacpp": "llama-server", "vllm": "vLLM", "library": "Ollama",
          "organization_owner": "LM Studio"}
# ...else by the endpoint that reported the context size (run/discovery.py's labels).
LABELS = {"llama.cpp": "llama-server", "vLLM": "vLLM", "LM Studio": "LM Studio", "Ollama": "Ollama"}


def server_kind(models: Any, ctx_label: str = "", provider: str = "openai") -> str:
    """The server software behind a URL ("llama-server", "llama-cpp-python", "vLLM", "Ollama", "LM Studio"),
    or "" when nothing it sent says so."""
    if provider == "ollama":
        return "Ollama"
    data = models.get("data") if isinstance(models, dict) else None
    owners = {item.get("owned_by") for item in data if isinstance(item, dict)} if isinstance(data, list) else set()
    found = {OWNERS[o] for o in owners if isinstance(o, str) and o in OWNERS}
    if len(found) == 1:
        return found.pop()
    return LABELS.get(ctx_label.split(" ", 1)[0], "")
