"""`--output-schema FILE` and `-o FILE` against the fake server: through the real entry point, and (for
the other outcomes) the same run in-process (`run_agent` with its own Host), which saves a start-up each.

The fake server records each request body, so the tests see what loop sent: the second request
carries the schema as `response_format` and offers no tools; a server that answers 400 to it gets the
same request once more without it.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from loopagent.client.shaped import refused
from loopagent.run.build import Host
from loopagent.run.launch import run_agent
from loopagent.run.spec import Flags, RunSpec
from tests.fakeserver import FakeServer, error, text, tools

SCHEMA = {"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]}, "count": {"type": "integer"}},
          "required": ["verdict", "count"], "additionalProperties": False}


def lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    return path


def run(run_loop, srv: FakeServer, workspace: Path, *args: str):
    return run_loop("agent", "--json", "-C", str(workspace), "--base-url", srv.url, *args, "count the files",
                    timeout=60)


def run_here(srv: FakeServer, workspace: Path, schema: Path, tmp_path: Path) -> tuple[int, list]:
    """The run `loop agent --json --output-schema SCHEMA` makes, in this process."""
    out = io.StringIO()
    host = Host(env={"PATH": os.environ.get("PATH", "")}, home=tmp_path / "home", cwd=workspace, out=out,
                err=io.StringIO())
    spec = RunSpec(task="count the files", workspace=workspace, json=True,
                   flags=Flags(base_url=srv.url, output_schema=str(schema), checkpoints=False))
    return run_agent(spec, None, host), lines(out.getvalue())


def test_a_valid_first_answer_in_a_fence_is_the_output_and_o_writes_it(run_loop, server, workspace, schema_file,
                                                                        tmp_path):
    server.add(tools(("list_files", {})), text('```json\n{"verdict": "pass", "count": 1}\n```'))
    out = tmp_path / "answer.json"
    proc = run(run_loop, server, workspace, "--output-schema", str(schema_file), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    result = lines(proc.stdout)[-1]
    assert result["status"] == "completed" and result["output"] == {"verdict": "pass", "count": 1}
    assert json.loads(out.read_text()) == {"verdict": "pass", "count": 1}
    assert len(server.requests) == 2 and not any("response_format" in r for r in server.requests)


def test_an_invalid_answer_is_asked_again_with_response_format_and_no_tools(run_loop, server, workspace,
                                                                             schema_file):
    server.add(text("All files pass, 1 file."), text('{"verdict": "pass", "count": 1}'))
    proc = run(run_loop, server, workspace, "--output-schema", str(schema_file))
    assert proc.returncode == 0, proc.stderr
    first, second = server.requests
    assert "response_format" not in first and first["tools"]
    assert second["response_format"] == {"type": "json_schema",
                                         "json_schema": {"name": "output", "schema": SCHEMA, "strict": True}}
    assert "tools" not in second and "tool_choice" not in second
    assert "not JSON" in second["messages"][-1]["content"]  # the model is told what was wrong
    events = lines(proc.stdout)
    assert any(e["type"] == "notice" and e["kind"] == "output" for e in events)
    assert events[-1]["output"] == {"verdict": "pass", "count": 1} and events[-1]["steps"] == 2


def test_invalid_twice_is_output_invalid_exit_6_and_o_is_left_alone(run_loop, server, workspace, schema_file,
                                                                    tmp_path):
    server.add(text('{"verdict": "maybe", "count": 1}'), text('{"verdict": "pass"}'))
    out = tmp_path / "answer.json"
    out.write_text("before\n")
    proc = run(run_loop, server, workspace, "--output-schema", str(schema_file), "-o", str(out))
    assert proc.returncode == 6, proc.stderr
    result = lines(proc.stdout)[-1]
    assert result["status"] == "output_invalid" and "output" not in result
    assert "'count' is a required property" in result["message"]
    assert "'maybe' is not one of" in server.requests[1]["messages"][-1]["content"]
    assert out.read_text() == "before\n"


def test_a_server_refusing_response_format_is_told_once_and_the_answer_still_checked(server, workspace, schema_file,
                                                                                     tmp_path):
    server.add(text("pass, 1"), error(400, "Unrecognized request argument supplied: response_format"),
               text('{"verdict": "fail", "count": 3}'))
    code, events = run_here(server, workspace, schema_file, tmp_path)
    assert code == 0
    assert ["response_format" in r for r in server.requests] == [False, True, False]
    assert "tools" not in server.requests[2]
    warnings = [e for e in events if e["type"] == "notice" and "refused response_format" in e["text"]]
    assert len(warnings) == 1
    assert events[-1]["output"] == {"verdict": "fail", "count": 3}
    key = f"openai {server.url} default"  # remembered for this process (a REPL's next turn asks without it)
    assert key in refused
    refused.discard(key)


def test_a_bad_schema_file_is_one_line_and_exit_2_before_any_request(run_loop, server, workspace, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "objekt"}')
    proc = run_loop("agent", "-C", str(workspace), "--base-url", server.url, "--output-schema", str(bad), "go",
                    timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "not a valid JSON Schema at type" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not server.requests
