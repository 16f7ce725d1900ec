"""`loop acp`: loop as an Agent Client Protocol agent on stdio, a third front-end on `run/` beside the
one-shot run and the REPL (DESIGN.md "Agent Client Protocol").

`serve` owns the process (stdout kept for the protocol, logs); `agent` answers the protocol's methods;
`session` is one open loop run per ACP session; `feed` turns the run's events into session updates and
replays a saved session; `bridge` lets the run's threads call the client (permissions, the editor's
buffers) and be cancelled while they wait; `content` reads a prompt's blocks and the slash commands.
The SDK (`acp`) is imported only here, so no other command pays for it.
"""


def _import_sdk() -> None:
    """Import the SDK's schema (about 200 pydantic models) without reading each field's docstring from the
    source, which its models ask pydantic for and which is a third of its import time; the descriptions
    only feed JSON Schema generation, which loop never does. Any other pydantic imports it plainly."""
    try:
        from pydantic._internal import _fields

        original = _fields.extract_docstrings_from_cls
    except (ImportError, AttributeError):
        import acp.schema  # noqa: F401
        return
    _fields.extract_docstrings_from_cls = lambda cls, use_inspect=False: {}
    try:
        import acp.schema  # noqa: F401
    finally:
        _fields.extract_docstrings_from_cls = original


_import_sdk()
