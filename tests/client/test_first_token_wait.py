"""The first-token allowance: a slow local server may process a long prompt for minutes, sending only
keep-alives (llama-cpp-python pings every 15 s); until the first token the idle deadline is
`first_token_timeout` when that is longer than `read_timeout`, and from then on `read_timeout` again."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from loopagent.client import IncompleteTurn
from loopagent.client.watch import Idle
from tests.client.test_bounded_streams import KEEPALIVE, complete, forever
from tests.fakeserver import FakeServer, Reply, text_events


def test_keep_alives_before_the_first_token_get_the_longer_allowance():
    with FakeServer([Reply(stream=lambda: forever(KEEPALIVE), delay=0.02)]) as srv:
        start = time.monotonic()
        with pytest.raises(IncompleteTurn, match=r"no first token for 1\.2 s") as info:
            complete(srv, read_timeout=0.3, first_token_timeout=1.2)
        waited = time.monotonic() - start
    assert 1.2 <= waited < 6  # not cut at the 0.3 s read deadline
    assert "LOOP_FIRST_TOKEN_TIMEOUT" in str(info.value)


def test_a_slow_first_token_within_the_allowance_is_answered():
    answer = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in text_events("at last")]

    def stream() -> Iterator[bytes]:
        for _ in range(30):  # 0.6 s of keep-alives: past read_timeout, within the allowance
            yield KEEPALIVE
        yield from answer

    with FakeServer([Reply(stream=stream, delay=0.02)]) as srv:
        assert complete(srv, read_timeout=0.3, first_token_timeout=5).text == "at last"


def test_after_the_first_token_the_read_deadline_applies():
    clock = [0.0]
    idle = Idle(10, lambda: clock[0], first=100)
    clock[0] = 99
    assert not idle.expired(0)  # before any progress: the allowance
    assert not idle.expired(1)  # progress
    clock[0] = 110.5
    assert idle.expired(1)  # 11.5 s without progress since then: the read deadline


def test_an_allowance_shorter_than_the_read_deadline_changes_nothing():
    clock = [0.0]
    idle = Idle(10, lambda: clock[0], first=2)
    clock[0] = 5
    assert not idle.expired(0) and idle.limit() == 10
