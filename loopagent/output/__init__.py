"""Output for programs: a final answer held to a JSON Schema (`--output-schema`), and `-o FILE`."""

from loopagent.output.schema import OutputSchema, Shaped, load_schema

__all__ = ["OutputSchema", "Shaped", "load_schema"]
