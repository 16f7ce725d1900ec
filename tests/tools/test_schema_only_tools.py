"""Tools as data: a schema-only tool (a JSON-schema dict, no pydantic class) joins the registry and runs
through validation, the policy and the real loop, against the fake server over HTTP."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest

from loopagent.cancel import Cancel
from loopagent.client.openai import OpenAIClient, build_request, wire_tool
from loopagent.details import Details
from loopagent.loop import HEADLESS_DENIAL, Agent, Steering
from loopagent.messages import ToolCall, ToolResult, UserMessage
from loopagent.policy import Policy
from loopagent.run.approve import PromptApprover
from loopagent.tools import Registry, Resource, SchemaTool, ToolContext, ToolError, ToolSpec, default_tools
from loopagent.tools.workspace import Workspace
from tests.fakeserver import FakeServer, Reply, text_events, tool_events

# Shaped like what an MCP server lists (FastMCP / zod output): $defs, anyOf, enum, no extra keys.
DEPLOY_SCHEMA = {
    "type": "object",
    "properties": {
        "service": {"type": "string", "minLength": 1, "description": "service to deploy"},
        "env": {"enum": ["staging", "production"]},
        "replicas": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": None},
        "labels": {"type": "array", "items": {"$ref": "#/$defs/Label"}},
    },
    "required": ["service", "env"],
    "additionalProperties": False,
    "$defs": {"Label": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}},
}


def deploy_tool(ran: list[dict]) -> SchemaTool:
    def run(args: dict, ctx: ToolContext) -> ToolResult:
        if args["service"] == "broken":
            raise ToolError("the service 'broken' has no build to deploy")
        ran.append(args)
        return ToolResult.ok(f"deployed {args['service']} to {args['env']}")

    spec = ToolSpec("mcp__ops__deploy", "Deploy a service.", copy.deepcopy(DEPLOY_SCHEMA),
                    subject=lambda a: f"{a['service']} -> {a['env']}")
    return SchemaTool(spec, run)


def agent_for(server: FakeServer, tmp_path: Path, tool: SchemaTool, mode: str = "edits",
              answer: str | None = None) -> tuple[Agent, PromptApprover | None, OpenAIClient]:
    client = OpenAIClient(server.url, "m", retries=0, read_timeout=10)
    approver = None if answer is None else PromptApprover(read=io.StringIO(answer), out=io.StringIO())
    agent = Agent(model=client, registry=Registry([*default_tools(), tool]),
                  tools=ToolContext(Workspace(tmp_path)), policy=Policy(mode, (), tmp_path),
                  steering=Steering(approver=approver))
    return agent, approver, client


def tool_messages(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def test_a_schema_only_tool_runs_through_validation_policy_and_the_loop(tmp_path):
    ran: list[dict] = []
    calls = [("mcp__ops__deploy", {"service": "web", "env": "prod"}),  # not in the enum
             ("mcp__ops__deploy", {"service": "web", "env": "staging", "force": True}),  # extra key
             ("mcp__ops__deploy", {"service": "web", "env": "staging", "labels": [{"k": 1}]}),
             ("mcp__ops__deploy", {"service": "broken", "env": "staging"}),
             ("mcp__ops__deploy", {"service": "web", "env": "staging", "replicas": 2})]
    with FakeServer([Reply(events=tool_events(calls)), Reply(events=text_events("deployed"))]) as server:
        agent, approver, client = agent_for(server, tmp_path, deploy_tool(ran), answer="y\ny\n")
        try:
            end = agent.run([UserMessage("deploy web")], "deploy web", Cancel())
        finally:
            client.close()
    assert end.status == "completed"
    # The request offers the tool with its schema exactly as the server listed it.
    offered = {t["function"]["name"]: t for t in server.requests[0]["tools"]}
    assert offered["mcp__ops__deploy"] == {"type": "function", "function": {
        "name": "mcp__ops__deploy", "description": "Deploy a service.", "parameters": DEPLOY_SCHEMA}}
    assert server.requests[0]["tool_choice"] == "auto"
    # Bad arguments are error results the model reads in the next request; they are never asked about.
    results = tool_messages(server.requests[1])
    assert results[0]["content"] == ("invalid arguments for mcp__ops__deploy: "
                                     "env: must be one of 'staging', 'production'")
    assert results[1]["content"] == ("invalid arguments for mcp__ops__deploy: force: unexpected argument "
                                     "(allowed: service, env, replicas, labels)")
    assert results[2]["content"] == "invalid arguments for mcp__ops__deploy: labels.0.key: required, missing"
    assert results[3]["content"] == "the service 'broken' has no build to deploy"
    assert results[4]["content"] == "deployed web to staging"
    # Not read-only and not an edit: mode edits asked for the two valid calls, showing the spec's subject.
    assert approver is not None and approver.out.getvalue().count("allow? [y/N/a]") == 2
    assert "web -> staging" in approver.out.getvalue()
    assert ran == [{"service": "web", "env": "staging", "replicas": 2}]


def test_headless_a_schema_only_tool_that_is_not_read_only_is_denied(tmp_path):
    ran: list[dict] = []
    with FakeServer([Reply(events=tool_events(("mcp__ops__deploy", {"service": "web", "env": "staging"}))),
                     Reply(events=text_events("could not"))]) as server:
        agent, _, client = agent_for(server, tmp_path, deploy_tool(ran))
        try:
            end = agent.run([UserMessage("deploy")], "deploy", Cancel())
        finally:
            client.close()
    assert ran == []
    assert tool_messages(server.requests[1])[0]["content"].startswith(HEADLESS_DENIAL)
    assert end.status == "approval_required" and end.exit_code == 4


def test_a_read_only_schema_tool_runs_unasked_even_in_mode_ask(tmp_path):
    seen: list[dict] = []
    spec = ToolSpec("mcp__docs__search", "Search the docs.",
                    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
                    read_only=True)
    tool = SchemaTool(spec, lambda a, ctx: (seen.append(a), ToolResult.ok("3 hits"))[1])
    with FakeServer([Reply(events=tool_events(("mcp__docs__search", {"query": "install"}))),
                     Reply(events=text_events("found"))]) as server:
        agent, approver, client = agent_for(server, tmp_path, tool, mode="ask", answer="")
        try:
            end = agent.run([UserMessage("q")], "q", Cancel())
        finally:
            client.close()
    assert end.status == "completed" and seen == [{"query": "install"}]
    assert approver is not None and approver.out.getvalue() == ""
    assert tool_messages(server.requests[1])[0]["content"] == "3 hits"


def test_read_only_subject_and_resource_are_decided_per_call():
    spec = ToolSpec("mcp__git__repo", "Repository actions.",
                    {"type": "object", "properties": {"action": {"enum": ["list", "delete"]}, "path": {"type": "string"}}},
                    read_only=lambda a: a["action"] == "list",
                    resource=lambda a: Resource("read", a["path"]) if a["action"] == "list" else None)
    registry = Registry([SchemaTool(spec, lambda a, ctx: ToolResult.ok("done"))])
    listing = registry.prepare(ToolCall("1", "mcp__git__repo", '{"action": "list", "path": "src"}'))
    deleting = registry.prepare(ToolCall("2", "mcp__git__repo", '{"action": "delete", "path": "src"}'))
    broken = registry.prepare(ToolCall("3", "mcp__git__repo", "{}"))  # the predicate raises KeyError
    assert listing.read_only and not deleting.read_only and not broken.read_only  # fails closed
    assert listing.resource == Resource("read", "src") and deleting.resource is None and broken.resource is None
    assert listing.subject == "src" and broken.subject == ""
    assert listing.arguments == {"action": "list", "path": "src"}


def test_built_in_tools_produce_specs_the_client_writes_as_before(tmp_path):
    registry = Registry(default_tools())
    specs = {s.name: s for s in registry.specs()}
    assert list(specs) == ["read_file", "list_files", "grep", "write_file", "edit_file", "shell", "todo_write"]
    assert specs["read_file"].read_only is True and specs["shell"].read_only is False
    read = specs["read_file"].parameters
    assert read["required"] == ["path"] and "title" not in read and "title" not in read["properties"]["path"]
    # Built-in tools name what a call touches, so the context need not know tool names.
    assert specs["read_file"].resource_of({"path": "./a/../b.py", "offset": 10, "limit": 5}) == \
        Resource("read", "b.py", (10, 15))
    assert specs["edit_file"].resource_of({"path": "b.py"}) == Resource("write", "b.py")
    assert specs["shell"].resource_of({"command": "pytest -q"}) == Resource("run", "pytest -q")
    assert specs["grep"].resource_of({"pattern": "x"}) is None
    # What the context asks of a call in the history: defaults filled in, broken calls touch nothing.
    assert registry.resource(ToolCall("1", "read_file", '{"path": "b.py"}')) == Resource("read", "b.py", (0, 2000))
    assert registry.resource(ToolCall("2", "read_file", '{"path": 3}')) is None
    assert registry.resource(ToolCall("3", "nope", "{}")) is None
    # Only the client writes wire JSON; a request built from specs equals one built from the wire dicts.
    body = build_request("m", [UserMessage("u")], registry.specs(), 100)
    assert body["tools"] == [wire_tool(s) for s in registry.specs()]
    assert json.loads(json.dumps(body))["tools"][0]["function"]["name"] == "read_file"


@pytest.mark.parametrize("name", ["github-mcp.delete_repo", "has space", "", "x" * 65, "naïve"])
def test_a_tool_name_no_server_accepts_is_refused_at_registration(name):
    with pytest.raises(ValueError, match="must be 1-64 characters"):
        ToolSpec(name, "d")


def test_parameters_must_be_an_object_schema_and_names_unique():
    with pytest.raises(ValueError, match="type object"):
        ToolSpec("t", "d", {"type": "string"})
    tool = SchemaTool(ToolSpec("shell", "d"), lambda a, ctx: ToolResult.ok(""))
    with pytest.raises(ValueError, match="two tools are named 'shell'"):
        Registry([*default_tools(), tool])


def test_built_in_results_carry_typed_details(tmp_path):
    registry = Registry(default_tools())
    ctx = ToolContext(Workspace(tmp_path))
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")

    def run(name: str, **args) -> ToolResult:
        prepared = registry.prepare(ToolCall("c", name, json.dumps(args)))
        assert not isinstance(prepared, ToolResult), prepared
        return registry.run(prepared, ctx)

    read = run("read_file", path="a.txt", limit=2)
    assert read.details == Details("ok", lines=2, total_lines=3)
    edit = run("edit_file", path="a.txt", old_string="two\n", new_string="2\n2b\n")
    assert edit.details is not None and (edit.details.added, edit.details.removed) == (2, 1)
    assert edit.details.diff == edit.display and edit.details.diff.startswith("--- a/a.txt")
    shell = run("shell", command="printf 'x\\ny\\nz'; exit 3")
    assert shell.is_error and shell.details == Details("error", exit_code=3, lines=3)
    missing = run("read_file", path="nope.txt")
    assert missing.is_error and missing.details == Details("error")
    ctx.cancel.set()
    cancelled = run("list_files")
    assert cancelled.details == Details("cancelled")
