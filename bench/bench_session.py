"""Session files: the cost of appending message N, and of loading + repairing a long session.

Appending (one O_APPEND write + fsync) must cost the same at N = 10 and N = 10,000. The
baseline is what a writer that rewrites the whole file per message would pay at the same N.
Loading a 10,000-message session (torn last line, an unanswered call) is compared with bare
`json.loads` of the same lines.

    python bench/bench_session.py [--quick]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loopagent.events import MessageAdded  # noqa: E402
from loopagent.messages import AssistantMessage, ToolCall, ToolResult, Usage, to_record  # noqa: E402
from loopagent.session import SessionWriter, header, load  # noqa: E402
from loopagent.session.writer import encode  # noqa: E402

BODY = "def handler(event):\n    return event['value'] * 2\n" * 20  # ~1 KB, like a small file read


def message(i: int):
    if i % 2 == 0:
        call = ToolCall(f"call_{i}", "read_file", json.dumps({"path": f"src/m{i % 50}.py"}))
        return AssistantMessage(tool_calls=(call,), stop_reason="tool_calls", usage=Usage(1000 + i, 12))
    return ToolResult(f"call_{i - 1}", "read_file", BODY)


def session_file(directory: Path, n: int) -> Path:
    """A session of `n` messages, written in bulk (fast to set up; the same bytes the writer writes)."""
    path = directory / f"s{n}.jsonl"
    lines = [encode(header(path.stem, directory, "m", "http://127.0.0.1:8080/v1", "bench"))]
    lines += [encode({"type": "message", "index": i, **to_record(message(i))}) for i in range(n)]
    path.write_bytes(b"".join(lines))
    return path


def append_times(path: Path, n: int, reps: int) -> list[float]:
    writer = SessionWriter.reopen(path, path.stat().st_size)
    out = []
    for k in range(reps):
        event = MessageAdded(message(n + k), n + k)
        t0 = time.perf_counter()
        writer(event)
        out.append(time.perf_counter() - t0)
    writer.close()
    return out


def rewrite_times(directory: Path, n: int, reps: int) -> list[float]:
    """Baseline: serialise the whole history and replace the file, per message."""
    records = [{"type": "message", "index": i, **to_record(message(i))} for i in range(n)]
    out = []
    for k in range(reps):
        t0 = time.perf_counter()
        data = b"".join(encode(r) for r in records) + encode({"type": "message", "index": n + k})
        tmp = directory / "rewrite.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, directory / "rewrite.jsonl")
        out.append(time.perf_counter() - t0)
    return out


def load_times(path: Path, reps: int) -> tuple[list[float], list[float], int]:
    ours, bare, repairs = [], [], 0
    for _ in range(reps):
        t0 = time.perf_counter()
        loaded = load(path)
        ours.append(time.perf_counter() - t0)
        repairs = len(loaded.repairs)
        t0 = time.perf_counter()
        for line in path.read_bytes().splitlines():
            try:
                json.loads(line)
            except ValueError:
                pass
        bare.append(time.perf_counter() - t0)
    return ours, bare, repairs


def ms(v: float) -> str:
    return f"{v * 1000:.3f}"


def main() -> None:
    quick = "--quick" in sys.argv
    sizes = [10, 1_000, 10_000]
    reps = 30 if quick else 200
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        print(f"append one message (median of {reps}; fsync per line)")
        print(f"{'N':>7} {'append ms':>10} {'rewrite-all ms':>15} {'rewrite/append':>15}")
        first = None
        for n in sizes:
            path = session_file(d, n)
            ours = statistics.median(append_times(path, n, reps))
            base = statistics.median(rewrite_times(d, n, 5 if n >= 10_000 else 15))
            first = first or ours
            print(f"{n:>7} {ms(ours):>10} {ms(base):>15} {base / ours:>14.1f}x")
        print(f"append at N=10,000 vs N=10: {ours / first:.2f}x (flat means ~1)")

        path = session_file(d, 10_000)
        data = path.read_bytes()
        path.write_bytes(data[:-40])  # the last line torn mid-write; its call then has no result either
        ours_l, bare_l, repairs = load_times(path, 3 if quick else 7)
        print(f"\nresume: load + repair of a 10,000-message session ({len(data) / 1e6:.1f} MB, {repairs} repairs)")
        print(f"{'load+repair ms':>15} {'bare json.loads ms':>19} {'ratio':>7}")
        lo, bl = statistics.median(ours_l), statistics.median(bare_l)
        print(f"{ms(lo):>15} {ms(bl):>19} {lo / bl:>6.2f}x")


if __name__ == "__main__":
    main()
