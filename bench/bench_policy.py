"""How long a shell decision takes: Policy.check against shlex.split of the same text (the baseline).

    python bench/bench_policy.py [--quick]
"""

from __future__ import annotations

import shlex
import statistics
import sys
import time

from loopagent.policy import Policy, Rule

CASES = {
    "plain": "pytest -q tests/test_a.py",
    "compound": "cd build && make -j4 2>&1 | tee build.log; echo done",
    "obfuscated": "bash -c \"env X=1 timeout 5 r''m -rf ./dist\"",
    "chain of 60": "true && " * 60 + "sudo id",
    "heredoc": "cat > notes.md <<'EOF'\n" + "a line of text\n" * 200 + "EOF",
}


def median_us(fn, text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    repeat = 20 if "--quick" in sys.argv else 200
    policy = Policy("edits", [Rule("allow", "pytest *"), Rule("deny", "npm publish*")], "/srv/project")
    policy.check("ls")  # first use imports bashlex
    print(f"{'command':<14} {'shlex.split us':>15} {'Policy.check us':>16} {'ratio':>7}  verdict")
    for name, text in CASES.items():
        base = median_us(shlex.split, text, repeat)
        ours = median_us(policy.check, text, repeat)
        print(f"{name:<14} {base:>15.1f} {ours:>16.1f} {ours / base:>6.1f}x  {policy.check(text).verdict}")


if __name__ == "__main__":
    main()
