"""What tokens cost: the user config's `prices` table applied to a run's Usage.

`"prices": {"MODEL": {"input": USD, "output": USD}}`, both in US dollars per million tokens, the
model named as loop sends it (`-m`). Without a price for the model there is no cost (None), never a
guess: a wrong number shown as a cost is worse than none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from loopagent.messages import Usage

PER_TOKENS = 1_000_000
MAX_PRICE = 100_000.0  # USD per million tokens; above this the number is a typo (cents for dollars)
EXAMPLE = '{"MODEL": {"input": 2.5, "output": 10}}'
SIDES = ("input", "output")


def check_prices(value: Any) -> dict[str, dict[str, float]]:
    """The `prices` setting, normalised to floats; ValueError naming the model and the bad part."""
    if not isinstance(value, Mapping):
        raise ValueError(f"give an object like {EXAMPLE} (USD per million tokens)")
    table = {}
    for model, price in value.items():
        if not isinstance(price, Mapping):
            raise ValueError(f"the price of {model!r} is {price!r}; give an object like {EXAMPLE[10:-1]}")
        unknown = sorted(set(price) - set(SIDES))
        if unknown:
            raise ValueError(f"the price of {model!r} has {unknown[0]!r}; only \"input\" and \"output\" "
                             "(USD per million tokens)")
        table[str(model)] = {side: _amount(model, side, price.get(side)) for side in SIDES}
    return table


def _amount(model: str, side: str, value: Any) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not 0 <= value <= MAX_PRICE:
        got = "missing" if value is None else repr(value)
        raise ValueError(f"the {side} price of {model!r} is {got}; give USD per million tokens, "
                         f"a number from 0 to {MAX_PRICE:g}")
    return float(value)


def price_of(prices: Mapping[str, Mapping[str, float]], model: str) -> Mapping[str, float] | None:
    """The price of `model` (its exact name), or None."""
    return prices.get(model)


def cost(usage: Usage, price: Mapping[str, float] | None) -> float | None:
    """What `usage` cost in USD at `price`; None without a price."""
    if price is None:
        return None
    return (usage.prompt_tokens * price["input"] + usage.completion_tokens * price["output"]) / PER_TOKENS


def pricer(prices: Mapping[str, Mapping[str, float]], model: str | Callable[[], str]) -> Callable[[Usage], float | None]:
    """A function from Usage to cost for `model` (a name, or a callable naming the model in use now)."""
    name = model if callable(model) else (lambda: model)

    def price(usage: Usage) -> float | None:
        return cost(usage, price_of(prices, name()))

    return price


def shown_cost(usd: float) -> str:
    """A cost for people: `$1.23`, and four decimals below a cent (`$0.0042`)."""
    return f"${usd:.2f}" if usd >= 0.01 or usd == 0 else f"${usd:.4f}"
