"""The catalog: each skill's name and description in the system prompt, within a budget (2% of the
context window in estimated tokens, at most 8,000 characters). Descriptions are shortened before any
skill is dropped; what is dropped is counted, and the prompt says where the full list is."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loopagent.context.estimate import estimate_tokens
from loopagent.skills.parse import Skill

SHARE = 0.02  # of the context window, in estimated tokens
MAX_CHARS = 8000
SHORTEST = 60  # a description is not shortened below this many characters before skills are dropped
HEAD = ("# Skills\nSkills hold the user's and the project's instructions for particular tasks. When a task "
        "matches a skill's description, call load_skill with its name before you start, and follow it.")


@dataclass(frozen=True)
class Catalog:
    """The catalog section of the system prompt ('' when no skill fits) and what it lists."""

    text: str
    listed: tuple[str, ...]  # the names it lists, in order
    left_out: int  # valid skills it does not list
    shortened: bool  # some descriptions were cut to fit


def build_catalog(skills: Sequence[Skill], ctx_size: int) -> Catalog:
    """The catalog of `skills` (in the order given) that fits the budget of a `ctx_size` window."""
    if not skills:
        return Catalog("", (), 0, False)
    budget = int(ctx_size * SHARE)

    def fits(text: str) -> bool:
        return len(text) <= MAX_CHARS and estimate_tokens(text) <= budget

    longest = max(len(s.description) for s in skills)
    text = render(skills, longest, len(skills))
    if fits(text):
        return Catalog(text, tuple(s.name for s in skills), 0, False)
    if fits(render(skills, SHORTEST, len(skills))):  # the longest cut that lets every skill in
        cap = largest(SHORTEST, longest, lambda c: fits(render(skills, c, len(skills))))
        return Catalog(render(skills, cap, len(skills)), tuple(s.name for s in skills), 0, True)
    count = largest(0, len(skills), lambda n: fits(render(skills, SHORTEST, n)))
    if count == 0:
        return Catalog("", (), len(skills), True)
    return Catalog(render(skills, SHORTEST, count), tuple(s.name for s in skills[:count]), len(skills) - count, True)


def largest(low: int, high: int, ok) -> int:
    """The largest n in [low, high] with ok(n), given ok(low) or nothing better (ok is monotone)."""
    while low < high:
        mid = (low + high + 1) // 2
        if ok(mid):
            low = mid
        else:
            high = mid - 1
    return low


def render(skills: Sequence[Skill], cap: int, count: int) -> str:
    """The section listing the first `count` skills, each description cut to `cap` characters."""
    if count == 0:
        return ""
    lines = [HEAD, *(f"- {s.name}: {shorten(s.description, cap)}" for s in skills[:count])]
    if count < len(skills):
        left = len(skills) - count
        lines.append(f"({left} more skill{'s' if left != 1 else ''} not listed for lack of room; "
                     "`loop skills` lists them all.)")
    return "\n".join(lines)


def shorten(text: str, cap: int) -> str:
    """`text` cut to at most `cap` characters at a word boundary, marked with an ellipsis."""
    if len(text) <= cap:
        return text
    cut = text[: max(0, cap - 1)]
    space = cut.rfind(" ")
    return (cut[:space] if space > cap // 2 else cut).rstrip(" ,;:.") + "…"
