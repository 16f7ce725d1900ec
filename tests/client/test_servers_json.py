"""$LOOP_HOME/servers.json (loopagent/servers.py): records per server, a corrupt file, concurrent writers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopagent.servers import Capabilities, ServerBook, server_key

ROOT = Path(__file__).resolve().parent.parent.parent


def test_a_record_is_kept_per_provider_url_and_model(tmp_path):
    book = ServerBook(tmp_path)
    a = server_key("openai", "http://127.0.0.1:8080/v1", "qwen")
    b = server_key("openai", "http://127.0.0.1:8080/v1", "llama")
    assert book.get(a) == Capabilities()  # nothing known: not a failure
    record = book.update(a, stream_tools=False)
    assert record is not None and record.stream_tools is False and record.learned.endswith("Z")
    book.update(b, ctx_size=8192, ctx_source="server")
    fresh = ServerBook(tmp_path)  # another run reads what this one learned
    assert fresh.get(a).stream_tools is False and fresh.get(a).ctx_size is None
    assert fresh.get(b).ctx_size == 8192 and fresh.get(b).stream_tools is None
    data = json.loads((tmp_path / "servers.json").read_text())
    assert data["version"] == 1 and set(data["servers"]) == {a, b}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".servers-")]  # no temp file left


def test_the_key_never_holds_credentials():
    key = server_key("openai", "https://user:secret@example.test/v1?api-key=sk-123", "m")
    assert "secret" not in key and "sk-123" not in key and "example.test" in key


@pytest.mark.parametrize("content", [
    b"{not json", b"[1, 2]", b'{"servers": 3}', b"\xff\xfe\x00garbage", b"",
])
def test_a_corrupt_or_foreign_file_is_ignored_with_one_notice_and_then_replaced(tmp_path, content):
    (tmp_path / "servers.json").write_bytes(content)
    told: list[str] = []
    book = ServerBook(tmp_path, told.append)
    key = server_key("openai", "http://h/v1", "m")
    assert book.get(key) == Capabilities()
    assert book.get(key) == Capabilities()
    assert len(told) == 1 and "servers.json" in told[0] and "ignoring it" in told[0]
    assert book.update(key, stream_tools=False) is not None
    assert ServerBook(tmp_path).get(key).stream_tools is False


def test_a_bad_record_costs_only_itself(tmp_path):
    good = server_key("openai", "http://h/v1", "m")
    (tmp_path / "servers.json").write_text(json.dumps({"version": 1, "servers": {
        good: {"stream_tools": False, "learned": "2026-01-01T00:00:00Z", "future_field": 1},
        "bad": {"stream_tools": "maybe"}, "worse": 7}}))
    book = ServerBook(tmp_path)
    assert book.get(good).stream_tools is False and book.get("bad") == Capabilities()


def test_an_unwritable_home_is_a_notice_not_a_crash(tmp_path):
    home = tmp_path / "home"
    home.write_text("a file where $LOOP_HOME should be")  # fails for root too, unlike a chmod
    told: list[str] = []
    assert ServerBook(home, told.append).update("k", stream_tools=False) is None
    assert len(told) == 1 and "cannot write" in told[0]


WRITER = """
import sys
from loopagent.servers import ServerBook
book = ServerBook(sys.argv[1])
for i in range(int(sys.argv[3])):
    assert book.update(f"{sys.argv[2]}-{i}", stream_tools=bool(i % 2)) is not None
"""


def test_concurrent_runs_never_corrupt_the_file_or_lose_records(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), f"w{n}", "25"], cwd=ROOT)
             for n in range(4)]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    data = json.loads((tmp_path / "servers.json").read_text())
    assert set(data["servers"]) == {f"w{n}-{i}" for n in range(4) for i in range(25)}
