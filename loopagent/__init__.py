"""loop: a terminal coding agent for any OpenAI-compatible chat-completions server."""

__version__ = "0.1.0"
