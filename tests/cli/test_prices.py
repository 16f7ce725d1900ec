"""Cost (issue 13 item 8): the user config's `prices` table, checked as it loads, applied to a Usage."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from loopagent.events import RunEnd
from loopagent.messages import Usage
from loopagent.prices import check_prices, cost, pricer, shown_cost
from tests.fakeserver import text

GPT = {"input": 2.5, "output": 10}


def test_a_price_table_is_normalised_to_floats():
    assert check_prices({"gpt-4o": {"input": 2, "output": 10}}) == {"gpt-4o": {"input": 2.0, "output": 10.0}}
    assert check_prices({}) == {}


@pytest.mark.parametrize(("bad", "said"), [
    ([1], "give an object like"),
    ({"m": "cheap"}, "the price of 'm' is 'cheap'"),
    ({"m": {"input": -1, "output": 1}}, "the input price of 'm' is -1"),
    ({"m": {"input": 1}}, "the output price of 'm' is missing"),
    ({"m": {"input": True, "output": 1}}, "the input price of 'm' is True"),
    ({"m": {"input": math.nan, "output": 1}}, "is nan"),
    ({"m": {"input": 1, "output": 1e9}}, "from 0 to"),
    ({"m": {"input": 1, "output": 1, "cached": 0.5}}, "has 'cached'"),
])
def test_a_bad_price_says_which_model_and_what(bad, said):
    with pytest.raises(ValueError, match=said.replace("(", r"\(")):
        check_prices(bad)


def test_cost_is_usd_per_million_tokens_and_none_without_a_price():
    assert cost(Usage(1_000_000, 500_000), GPT) == pytest.approx(7.5)
    assert cost(Usage(1200, 300), GPT) == pytest.approx(0.006)
    assert cost(Usage(1200, 300), None) is None


def test_the_pricer_follows_the_model_in_use():
    model = ["gpt-4o"]
    price = pricer({"gpt-4o": GPT}, lambda: model[0])
    assert price(Usage(1000, 0)) == pytest.approx(0.0025)
    model[0] = "local"
    assert price(Usage(1000, 0)) is None
    assert pricer({"gpt-4o": GPT}, "gpt-4o")(Usage(0, 1000)) == pytest.approx(0.01)


def test_costs_are_shown_in_dollars_with_cents_or_four_decimals():
    assert shown_cost(1.234) == "$1.23" and shown_cost(0.0042) == "$0.0042" and shown_cost(0) == "$0.00"


def test_a_run_end_has_no_cost_unless_priced():
    assert RunEnd("completed", 1, Usage()).cost is None
    assert RunEnd("completed", 1, Usage(10, 1), cost=0.5).cost == 0.5


# ---- through the real entry point -------------------------------------------------------------------

def write_config(loop_home: Path, data: dict | str) -> None:
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(data if isinstance(data, str) else json.dumps(data, indent=1))


@pytest.mark.parametrize("prices", [{"m": {"input": -1, "output": 1}}, {"m": {"input": "2$", "output": 1}},
                                    ["m"], {"m": {"in": 1, "out": 2}}])
def test_a_bad_prices_config_is_one_line_exit_2(run_loop, tmp_path, loop_home, prices):
    write_config(loop_home, {"model": "m", "prices": prices})
    proc = run_loop("agent", "-C", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1", "hi")
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "config.json line 1: prices" in proc.stderr or "config.json line 3: prices" in proc.stderr


def test_a_bad_prices_variable_is_one_line_exit_2(run_loop, tmp_path):
    proc = run_loop("agent", "-C", str(tmp_path), "hi", env={"LOOP_PRICES": '{"m": {"input": 1}}'})
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        "loop: env LOOP_PRICES: prices: the output price of 'm' is missing; give USD per million tokens, "
        "a number from 0 to 100000"]


def test_loop_config_shows_the_price_table(run_loop, tmp_path, loop_home):
    write_config(loop_home, {"prices": {"m": GPT}})
    proc = run_loop("config", "-C", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert '{"m": {"input": 2.5, "output": 10.0}}' in proc.stdout


def test_a_priced_run_completes(run_loop, server, tmp_path, loop_home):
    write_config(loop_home, {"model": "m", "prices": {"m": GPT}})
    server.add(text("hello"))
    proc = run_loop("agent", "-C", str(tmp_path), "--base-url", server.url, "--json", "--no-checkpoints", "hi")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["status"] == "completed"


def test_the_result_line_carries_the_cost(run_loop, server, tmp_path, loop_home):
    write_config(loop_home, {"model": "m", "prices": {"m": GPT}})
    server.add(text("hello"))  # usage 100 prompt + 10 completion tokens
    proc = run_loop("agent", "-C", str(tmp_path), "--base-url", server.url, "--json", "--no-checkpoints", "hi")
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["cost_usd"] == pytest.approx((100 * 2.5 + 10 * 10) / 1e6)


def test_the_done_line_shows_the_cost_when_a_price_is_known(run_loop, server, tmp_path, loop_home):
    write_config(loop_home, {"model": "m", "prices": {"m": GPT}})
    server.add(text("hello"))
    proc = run_loop("agent", "-C", str(tmp_path), "--base-url", server.url, "--no-checkpoints", "hi")
    done = next(line for line in proc.stdout.splitlines() if line.startswith("done: "))
    assert done.startswith("done: completed, 1 step, 100+10 tokens, $0.000"), done
    server.add(text("hello"))
    write_config(loop_home, {"model": "other", "prices": {"m": GPT}})
    proc = run_loop("agent", "-C", str(tmp_path), "--base-url", server.url, "--no-checkpoints", "hi")
    assert "$" not in next(line for line in proc.stdout.splitlines() if line.startswith("done: "))
