"""Agent Skills through the real `loop` entry point against the fake server: what the first request carries,
what load_skill and `$NAME` send, a compaction, `loop skills`, and `allowed-tools` granting nothing."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

from loopagent.context import SUMMARY_HEADER, estimate_tokens
from loopagent.context.view import RESENT_HEADER
from loopagent.run.build import Host
from loopagent.run.launch import run_agent
from loopagent.run.spec import Flags, RunSpec
from tests.fakeserver import FakeServer, text, tools, user_texts

BODY = "RELEASE-BODY: tag with git tag vX, then run scripts/build.sh."


def write_skill(root: Path, name: str, description: str, body: str, extra: str = "",
                files: dict[str, str] | None = None) -> None:
    (root / name).mkdir(parents=True, exist_ok=True)
    (root / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n")
    for rel, content in (files or {}).items():
        (root / name / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / name / rel).write_text(content)


def agent(run_loop, server, ws: Path, user: Path, *args: str):
    return run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--ctx-size", "16384",
                    "--sandbox", "off", "--no-checkpoints", *args, env={"HOME": str(user)})


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_catalog_without_bodies_then_load_skill_with_files_and_a_project_skill_over_the_user_s(
        run_loop, server, tmp_path, loop_home):
    ws, user = tmp_path / "ws", tmp_path / "user"
    write_skill(ws / ".agents" / "skills", "release", "How we release: tag, build, publish.", BODY,
                files={"references/checklist.md": "1. tag\n", "scripts/build.sh": "make\n"})
    write_skill(user / ".agents" / "skills", "release", "The user's own release.", "USER-RELEASE-BODY")
    for n in range(299):  # 300 valid skills in all: far more than 2% of 16,384 tokens can list
        write_skill(loop_home / "skills", f"helper-{n:03d}", f"Helper {n}: " + "does a particular thing " * 6,
                    f"HELPER-BODY-{n}")
    server.add(tools(("load_skill", {"name": "release"})), text("Released."))

    proc = agent(run_loop, server, ws, user, "release the project")
    assert proc.returncode == 0, proc.stderr
    assert ("loop: warning: the project's skill 'release' "
            f"({ws}/.agents/skills/release) overrides the user's ({user}/.agents/skills/release)") in proc.stderr
    first = server.requests[0]
    system = first["messages"][0]["content"]
    catalog = system[system.index("# Skills"):]
    assert "- release: How we release: tag, build, publish." in catalog
    assert len(catalog) <= 8000 and estimate_tokens(catalog) <= 16384 * 0.02
    assert "more skills not listed for lack of room; `loop skills` lists them all." in catalog
    assert "BODY" not in json.dumps(first)  # names and descriptions only, no skill's instructions
    [offered] = [t["function"] for t in first["tools"] if t["function"]["name"] == "load_skill"]
    assert offered["parameters"]["properties"]["name"]["enum"][0] == "release"
    result = [m for m in server.requests[1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert result.startswith('<skill name="release" folder=".agents/skills/release">') and BODY in result
    assert "- references/checklist.md\n- scripts/build.sh" in result and "USER-RELEASE-BODY" not in result


def test_dollar_name_loads_before_the_model_is_asked_and_allowed_tools_grants_nothing(run_loop, server, tmp_path):
    ws, user = tmp_path / "ws", tmp_path / "user"
    write_skill(ws / ".agents" / "skills", "cleanup", "Clean the build.", "CLEANUP-BODY: remove build/.",
                extra="allowed-tools: Bash(*)\n")
    (ws / ".agents" / "skills" / "broken").mkdir()
    (ws / ".agents" / "skills" / "broken" / "SKILL.md").write_text("no front matter\n")
    server.add(tools(("shell", {"command": "touch pwned"})), text("Cleaned."))

    proc = agent(run_loop, server, ws, user, "$cleanup now")  # approval mode edits (the default), headless
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert not (ws / "pwned").exists()
    assert "loop: warning: 1 skill(s) left out as invalid; `loop skills` says why" in proc.stderr
    out = events(proc.stdout)
    assert {"type": "notice", "kind": "skill", "text": "loaded skill cleanup (.agents/skills/cleanup)"} in out
    assert out[-1]["status"] == "approval_required"
    sent = user_texts(server.requests[0])[-1]
    assert sent.startswith("$cleanup now\n\n<skill name=\"cleanup\"") and "CLEANUP-BODY" in sent
    denied = [m for m in server.requests[1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "needs approval" in denied


def test_a_loaded_skill_is_sent_again_after_a_forced_compaction(run_loop, server, tmp_path):
    ws, user = tmp_path / "ws", tmp_path / "user"
    write_skill(ws / ".agents" / "skills", "release", "How we release.", BODY)
    for k in range(10):
        (ws / f"f{k}.txt").write_text("".join(f"f{k} line {i}: the balance is {i * 7}\n" for i in range(12)))
    turns = [tools(("load_skill", {"name": "release"}))] + \
        [tools(("read_file", {"path": f"f{k}.txt"})) for k in range(10)] + [text("Done.")]
    script = iter(turns)
    server.add(*[lambda body: text("SUMMARY: loaded release, read the files.") if "tools" not in body
                 else next(script)] * 20)
    limit = base_tokens(ws, user) + 1500  # the task, the skill and a few reads fit; ten do not

    ctx = 2 * limit if limit <= 4096 else limit + 4096  # the prompt's limit is ctx minus min(4096, ctx / 2)
    proc = agent(run_loop, server, ws, user, "--ctx-size", str(ctx), "read the files, then release")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kinds = ["compact" if "tools" not in b else "agent" for b in server.requests]
    after = server.requests[kinds.index("compact") + 1]["messages"]
    assert any(m["content"].startswith(SUMMARY_HEADER) for m in after if m["role"] == "user")
    assert not any(m["role"] == "tool" and BODY in m["content"] for m in after)  # its own turn was summarised
    [resent] = [m["content"] for m in after if m["role"] == "user" and m["content"].startswith(RESENT_HEADER)]
    assert BODY in resent
    assert all(BODY in json.dumps(b) for b in server.requests[kinds.index("compact") + 1:])


def base_tokens(ws: Path, user: Path) -> int:
    """Prompt tokens of a first request in `ws` (system prompt, tools, task), measured in-process."""
    with FakeServer([text("ok")]) as probe:
        host = Host(env={"PATH": os.environ.get("PATH", ""), "HOME": str(user)}, home=ws.parent / "probe-home",
                    cwd=ws, out=io.StringIO(), err=io.StringIO())
        spec = RunSpec(task="read the files, then release", workspace=ws, json=True,
                       flags=Flags(base_url=probe.url, ctx_size=16384, sandbox="off", checkpoints=False))
        assert run_agent(spec, host=host) == 0
        body = probe.requests[0]
    return estimate_tokens(json.dumps(body["messages"])) + estimate_tokens(json.dumps(body["tools"]))


def test_loop_skills_lists_origins_what_hides_what_and_why_invalid_ones_are_left_out(run_loop, tmp_path, loop_home):
    ws, user = tmp_path / "ws", tmp_path / "user"
    write_skill(ws / ".agents" / "skills", "release", "How we release.", "x", extra="allowed-tools: Bash(*)\n")
    write_skill(ws / ".loop" / "skills", "Bad-Name", "Capitals.", "x")
    write_skill(user / ".agents" / "skills", "release", "Hidden.", "x")
    write_skill(loop_home / "skills", "lint", "Run the linters.", "x")
    (ws / ".agents" / "skills" / "nodesc").mkdir()
    (ws / ".agents" / "skills" / "nodesc" / "SKILL.md").write_text("---\nname: nodesc\n---\n")

    proc = run_loop("skills", "-C", str(ws), env={"HOME": str(user)})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("2 skills (1 project, 1 user), 2 invalid\n")
    assert "release  project  .agents/skills/release\n  How we release.\n" in out
    assert "  allowed-tools: Bash(*) (shown only: loop's approval mode and rules decide)" in out
    assert f"lint  user  {loop_home}/skills/lint" in out
    assert "  release  user  ~/.agents/skills/release  (hidden by .agents/skills/release)" in out
    assert "  Bad-Name  project  .loop/skills/Bad-Name\n    the name 'Bad-Name' is not lower-case\n" in out
    assert "  nodesc  project  .agents/skills/nodesc\n    the front matter has no description\n" in out


def test_resume_keeps_a_loaded_skill_and_does_not_load_it_twice(tmp_path):
    ws, user = tmp_path / "ws", tmp_path / "user"
    write_skill(ws / ".agents" / "skills", "release", "How we release.", BODY)
    host = Host(env={"PATH": os.environ.get("PATH", ""), "HOME": str(user)}, home=tmp_path / "home", cwd=ws,
                out=io.StringIO(), err=io.StringIO())
    with FakeServer([tools(("load_skill", {"name": "release"})), text("Tagged."),
                     tools(("load_skill", {"name": "release"})), text("Published."),
                     tools(("load_skill", {"name": "release"})), text("Forked.")]) as srv:
        flags = Flags(base_url=srv.url, ctx_size=16384, sandbox="off", checkpoints=False)
        assert run_agent(RunSpec(task="tag it", workspace=ws, json=True, flags=flags), host=host) == 0
        assert run_agent(RunSpec(task="now publish $release", workspace=ws, json=True, flags=flags,
                                 resume="last"), host=host) == 0
        assert run_agent(RunSpec(task=None, workspace=ws, json=True, flags=flags, fork="last:4"), host=host) == 0
        resumed = srv.requests[2]["messages"]
        forked = [m for m in srv.requests[5]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "already loaded" in forked and BODY in json.dumps(srv.requests[4]["messages"])  # the fork kept it
    assert sum(BODY in (m.get("content") or "") for m in resumed) == 1  # from the first run, not loaded again
    assert user_texts(srv.requests[2])[-1] == "now publish $release"  # `$release` is already loaded: no block
    again = [m for m in srv.requests[3]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "already loaded" in again and BODY not in again
    assert '"kind": "skill", "text": "skill release is already loaded"' in host.out.getvalue()

