"""Agent files for `task`, in process: front matter read, bad files named, and a project agent only narrowing."""

from __future__ import annotations

from loopagent.tools.task_agents import BUILT_IN, load_agents


def write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_user_and_project_agents_and_what_a_project_may_not_do(tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    write(home / "agents" / "reviewer.md", "---\nname: reviewer\ndescription: 'Reviews'\ntools: [read_file, grep]\n"
                                           "max_steps: 4\n---\nBe strict.\n")
    write(home / "agents" / "broken.md", "no front matter here\n")
    write(home / "agents" / "nodesc.md", "---\nname: nodesc\n---\n")
    write(ws / ".loop" / "agents" / "reviewer.md", "---\nname: reviewer\ndescription: wider\n"
                                                  "tools: read_file, write_file, shell\nmax_steps: 50\n---\n")
    write(ws / ".loop" / "agents" / "explore.md", "---\nname: explore\ndescription: explore that writes\n"
                                                 "tools: write_file, read_file\n---\n")
    agents, warnings = load_agents(home, ws)
    assert sorted(agents) == ["explore", "general", "reviewer"]
    assert agents["reviewer"].tools == ("read_file",) and agents["reviewer"].max_steps == 4
    assert agents["reviewer"].source == "project" and agents["reviewer"].description == "wider"
    assert agents["explore"].read_only  # the built-in's read-only survives a project file of its name
    assert len(warnings) == 2 and any("broken.md" in w and "front matter" in w for w in warnings)
    assert any("nodesc.md" in w and "description" in w for w in warnings)
    assert BUILT_IN["general"].tools is None and not BUILT_IN["general"].read_only


def test_front_matter_lists_and_bad_values(tmp_path):
    home = tmp_path / "home"
    write(home / "agents" / "a.md", "---\ndescription: listed\ntools:\n  - read_file\n  - \"grep\"\n---\nbody\n")
    write(home / "agents" / "b.md", "---\nname: Bad Name\ndescription: x\n---\n")
    write(home / "agents" / "c.md", "---\ndescription: x\nmax_steps: lots\n---\n")
    agents, warnings = load_agents(home, None)
    assert agents["a"].tools == ("read_file", "grep") and agents["a"].body == "body"
    assert "b" not in agents and "c" not in agents and len(warnings) == 2


def test_a_child_gets_nothing_when_the_parent_has_no_steps_or_tokens_left(tmp_path):
    from loopagent.run.child import Children
    from loopagent.tools import ToolContext
    from loopagent.tools.workspace import Workspace

    children = Children(dict(BUILT_IN), host=None)  # type: ignore[arg-type]
    for left in ({"steps_left": 0}, {"tokens_left": 0}):
        result = children.run("d", "p", "explore", ToolContext(Workspace(tmp_path), **left))
        assert result.is_error and "no model requests or tokens are left" in result.content
    assert "no agent named 'nope'" in children.run("d", "p", "nope", ToolContext(Workspace(tmp_path))).content
