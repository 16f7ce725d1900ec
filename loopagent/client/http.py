"""The one way loop opens an HTTP client to a model server.

Two things every such client needs: the environment's proxy settings ignored (a local model server must
never be reached through a proxy, and the environment may be a CI job's), and certificates read only when
they can matter. httpx reads the whole CA bundle whenever a client is made, about 20 ms of a cold run, even
for `http://127.0.0.1:8080`; a plain-HTTP server gets a TLS context with no trusted certificates instead,
so a redirect to HTTPS fails verification rather than going unchecked.
"""

from __future__ import annotations

from typing import Any


def connect(base_url: str, **options: Any):
    """An `httpx.Client` for a server at `base_url`; `options` go to httpx (headers, timeout, transport...)."""
    import httpx

    if not base_url.lower().startswith("https:") and "verify" not in options:
        import ssl

        options["verify"] = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, and trusts nothing
    return httpx.Client(trust_env=False, **options)
