"""Rendering throughput of the terminal renderer: is the cost per token flat over a long answer?

Feeds N tokens of Markdown (prose, lists, fenced code) as TextDelta events through the Rich
renderer (colour, live area on) to a 100x40 terminal-sized console writing to /dev/null, and
compares with writing the same tokens raw. A naive renderer that re-renders the whole answer
as Markdown on every token is timed on a short prefix to show what linear cost avoids.

    python bench/bench_render.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.markdown import Markdown  # noqa: E402

from loopagent.events import AssistantDone, RunEnd, TextDelta, TurnStart  # noqa: E402
from loopagent.messages import AssistantMessage, Usage  # noqa: E402
from loopagent.render.terminal import TerminalRenderer  # noqa: E402

WORDS = ("the loop sends history model tool result context window token stream block render "
         "terminal file edit patch test shell command answer user agent request server").split()


def markdown_text(chars: int, seed: int = 7) -> str:
    """Deterministic Markdown: headings, paragraphs, lists and python code blocks."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < chars:
        kind = rng.random()
        if kind < 0.1:
            part = f"## Section {len(parts)}\n"
        elif kind < 0.55:
            sentences = [" ".join(rng.choices(WORDS, k=rng.randint(6, 16))).capitalize() + "." for _ in range(4)]
            part = " ".join(sentences) + " Uses `inline_code()` and **bold** words.\n"
        elif kind < 0.7:
            part = "".join(f"- item {i}: {' '.join(rng.choices(WORDS, k=5))}\n" for i in range(rng.randint(2, 6)))
        else:
            body = "".join(f"    value_{i} = compute({i}, '{rng.choice(WORDS)}')  # step {i}\n"
                           for i in range(rng.randint(5, 30)))
            part = f"```python\ndef function_{len(parts)}(x):\n{body}    return x\n```\n"
        parts.append(part)
        size += len(part) + 1
    return "\n".join(parts)


def tokens_of(text: str, count: int) -> list[str]:
    """Cut text into `count` pieces of about 4 characters, like a model's token deltas."""
    step = max(1, len(text) // count)
    return [text[i:i + step] for i in range(0, step * count, step)]


def null_renderer(live: bool = True) -> tuple[TerminalRenderer, object]:
    sink = open(os.devnull, "w")  # noqa: SIM115 - closed by the caller
    renderer = TerminalRenderer(sink, color=True, live=live)
    renderer.console.size = (100, 40)
    return renderer, sink


def run_renderer(tokens: list[str]) -> tuple[float, list[float]]:
    """Total seconds and seconds per 1,000 tokens, through the real renderer."""
    renderer, sink = null_renderer()
    groups: list[float] = []
    start = mark = time.perf_counter()
    renderer(TurnStart(1))
    for n, token in enumerate(tokens, 1):
        renderer(TextDelta(token))
        if n % 1000 == 0:
            now = time.perf_counter()
            groups.append(now - mark)
            mark = now
    renderer(AssistantDone(AssistantMessage("".join(tokens))))
    renderer(RunEnd("completed", 1, Usage()))
    total = time.perf_counter() - start
    sink.close()
    return total, groups


def run_raw(tokens: list[str]) -> float:
    """The floor: write and flush each token as it comes."""
    with open(os.devnull, "w") as sink:
        start = time.perf_counter()
        for token in tokens:
            sink.write(token)
            sink.flush()
        return time.perf_counter() - start


def run_naive(tokens: list[str]) -> float:
    """What linear rendering avoids: the whole answer re-rendered as Markdown on every token."""
    with open(os.devnull, "w") as sink:
        console = Console(file=sink, force_terminal=True, width=100, height=40)
        text = ""
        start = time.perf_counter()
        for token in tokens:
            text += token
            console.print(Markdown(text))
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 tokens, one repetition")
    opts = parser.parse_args()
    count, reps, naive_count = (20_000, 1, 300) if opts.quick else (200_000, 3, 500)
    tokens = tokens_of(markdown_text(count * 4), count)
    run_renderer(tokens[:3000])  # warm-up: imports, lexers and caches are not what is measured
    runs = [run_renderer(tokens) for _ in range(reps)]
    raws = [run_raw(tokens) for _ in range(reps)]
    total = statistics.median(r[0] for r in runs)
    first = statistics.median(r[1][0] for r in runs)
    last = statistics.median(r[1][-1] for r in runs)
    first10 = statistics.median(g for r in runs for g in r[1][:10])
    last10 = statistics.median(g for r in runs for g in r[1][-10:])
    raw = statistics.median(raws)
    ours_prefix = first * naive_count / 1000
    naive = run_naive(tokens[:naive_count])

    print(f"render benchmark: {count:,} tokens ({len(''.join(tokens)):,} chars of Markdown), "
          f"100x40 colour console -> /dev/null, median of {reps}")
    rows = [
        ("first 1,000 tokens", f"{first * 1000:.1f} ms", ""),
        ("last 1,000 tokens", f"{last * 1000:.1f} ms", f"{last / first:.2f}x first"),
        ("median of first 10 groups of 1,000", f"{first10 * 1000:.1f} ms", ""),
        ("median of last 10 groups of 1,000", f"{last10 * 1000:.1f} ms", f"{last10 / first10:.2f}x first"),
        (f"total, renderer ({count:,} tokens)", f"{total:.2f} s", f"{total / raw:.0f}x raw"),
        (f"total, raw write+flush ({count:,} tokens)", f"{raw:.3f} s", "1.00x"),
        (f"naive re-render per token, first {naive_count:,} tokens", f"{naive:.2f} s",
         f"{naive / ours_prefix:.0f}x ours on the same tokens"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"| {'measure':<{width}} | {'time':>10} | {'ratio':<28} |")
    print(f"|{'-' * (width + 2)}|{'-' * 12}|{'-' * 30}|")
    for name, value, ratio in rows:
        print(f"| {name:<{width}} | {value:>10} | {ratio:<28} |")


if __name__ == "__main__":
    main()
