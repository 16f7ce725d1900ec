"""Counts in words: `1 step`, `2 steps`. Every count a person or the model reads goes through `counted`."""

from __future__ import annotations

# Nouns whose plural is not noun + "s".
IRREGULAR = {"match": "matches", "entry": "entries", "was": "were"}


def plural(noun: str) -> str:
    """The plural of one of our nouns."""
    return IRREGULAR.get(noun, noun + "s")


def counted(n: int, noun: str, many: str = "") -> str:
    """`n noun`, the noun in the plural unless n is 1 (`many` overrides the plural)."""
    return f"{n} {noun if n == 1 else (many or plural(noun))}"
