"""The catalog in the system prompt stays within its budget: descriptions shortened first, then skills left out
and counted."""

from __future__ import annotations

from pathlib import Path

from loopagent.context import estimate_tokens
from loopagent.skills import Skill, build_catalog
from loopagent.skills.catalog import MAX_CHARS, SHORTEST, shorten


def skills(n: int, words: int = 30) -> list[Skill]:
    text = " ".join(f"word{i}" for i in range(words))
    return [Skill(f"skill-{i:04d}", f"Use for task {i}: {text}", Path(f"/s/skill-{i:04d}"),
                  Path(f"/s/skill-{i:04d}/SKILL.md"), "project") for i in range(n)]


def within(text: str, ctx_size: int) -> bool:
    return len(text) <= MAX_CHARS and estimate_tokens(text) <= ctx_size * 0.02


def test_a_few_skills_are_listed_whole():
    catalog = build_catalog(skills(3), 32768)
    assert catalog.left_out == 0 and not catalog.shortened and within(catalog.text, 32768)
    assert all(f"- {s.name}: {s.description}" in catalog.text for s in skills(3))
    assert "more skill" not in catalog.text


def test_descriptions_are_shortened_before_any_skill_is_left_out():
    catalog = build_catalog(skills(20), 32768)  # 20 whole descriptions do not fit 655 tokens; shortened ones do
    assert catalog.shortened and catalog.left_out == 0 and len(catalog.listed) == 20
    assert within(catalog.text, 32768) and "…" in catalog.text


def test_300_skills_stay_within_the_budget_and_the_prompt_says_how_many_are_left_out():
    for ctx in (8192, 16384, 131072, 1_000_000):
        catalog = build_catalog(skills(300), ctx)
        assert within(catalog.text, ctx), ctx
        assert catalog.left_out == 300 - len(catalog.listed) > 0
        assert f"({catalog.left_out} more skills not listed for lack of room; `loop skills` lists them all.)" \
            in catalog.text
        assert catalog.listed == tuple(s.name for s in skills(300))[: len(catalog.listed)]  # in order, first ones kept
    assert len(build_catalog(skills(300), 1_000_000).text) > MAX_CHARS - 200  # the character cap is the one that binds


def test_a_window_too_small_for_any_skill_gets_no_catalog():
    catalog = build_catalog(skills(5), 1000)
    assert catalog.text == "" and catalog.listed == () and catalog.left_out == 5
    assert build_catalog([], 32768).text == ""


def test_shorten_cuts_at_a_word_and_marks_it():
    assert shorten("short", 10) == "short"
    cut = shorten("one two three four five six seven", 15)
    assert cut.endswith("…") and len(cut) <= 15 and cut.startswith("one two")
    assert len(shorten("x" * 200, SHORTEST)) <= SHORTEST
