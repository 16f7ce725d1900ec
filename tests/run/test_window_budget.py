"""The reply budget of a window and the smallest window check_window suggests (run/discovery.py, preflight.py)."""

from __future__ import annotations

import pytest

from loopagent.run.discovery import reply_budget
from loopagent.run.preflight import least_size


@pytest.mark.parametrize(("ctx", "max_tokens", "budget"), [
    (2048, 4096, 512), (1024, 4096, 256), (2730, 4096, 682), (3000, 4096, 952), (3000, 300, 300),
    (4096, 4096, 2048), (5000, 4096, 2500), (6144, 4096, 3072), (16384, 4096, 4096), (16384, 10000, 8192),
    (8192, 4096, 4096),
])
def test_reply_budget(ctx, max_tokens, budget):
    assert reply_budget(ctx, max_tokens) == budget


@pytest.mark.parametrize("fixed", [100, 700, 1316, 1536, 2100, 3072, 3100, 6000, 20000])
@pytest.mark.parametrize("max_tokens", [256, 4096])
def test_least_size_is_the_smallest_that_holds_the_prompt(fixed, max_tokens):
    size = least_size(fixed, max_tokens)
    assert size - reply_budget(size, max_tokens) >= fixed
    assert all(s - reply_budget(s, max_tokens) < fixed for s in range(fixed, size))  # none smaller fits


@pytest.mark.parametrize("max_tokens", [256, 4096, 10000])
def test_a_bigger_window_never_leaves_the_prompt_less_room(max_tokens):
    room = [s - reply_budget(s, max_tokens) for s in range(256, 20000)]
    assert room == sorted(room)
