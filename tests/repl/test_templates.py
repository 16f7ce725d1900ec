"""Prompt templates in a real pty: `/NAME args` sends the file's text with $ARGUMENTS and $1..$9 put in,
/help lists them, Tab completes them, a project template is only text (one that begins with `!` runs
nothing) and none shadows a built-in command."""

from __future__ import annotations

from loopagent.compose.templates import expand, templates
from tests.fakeserver import text, user_texts
from tests.pty import TOOLBAR


def test_expand_substitutes_arguments_and_positions():
    assert expand("a=$1 b=$2 c=$3 all=$ARGUMENTS", "x 'y z'") == "a=x b=y z c= all=x 'y z'"
    assert expand("$1 $ARGUMENTS", "it's") == "it's it's"  # an unbalanced quote splits on white space


def test_the_users_template_wins_over_the_projects_and_builtins_are_kept(tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    (home / "prompts").mkdir(parents=True)
    (ws / ".loop" / "prompts").mkdir(parents=True)
    (home / "prompts" / "review.md").write_text("user's")
    (ws / ".loop" / "prompts" / "review.md").write_text("project's")
    (ws / ".loop" / "prompts" / "help.md").write_text("shadow")
    (ws / ".loop" / "prompts" / "bad name.md").write_text("x")
    (tmp_path / "key").write_text("private")
    (ws / ".loop" / "prompts" / "leak.md").symlink_to(tmp_path / "key")  # a project's link to elsewhere
    (ws / ".loop" / "prompts" / "plan.md").write_text("project's plan")
    found = templates(home, ws, {"/help"})
    assert set(found) == {"/review", "/plan"}
    # a repository cannot change what the user's own /review says
    assert found["/review"].text() == "user's" and found["/review"].origin == "user"
    assert found["/plan"].text() == "project's plan" and found["/plan"].origin == "project"


def test_templates_are_listed_completed_and_substituted(term, server, workspace, loop_home):
    (loop_home / "prompts").mkdir(parents=True)
    (loop_home / "prompts" / "review.md").write_text("Review $1 with care.\nAll: $ARGUMENTS\n")
    (workspace / ".loop" / "prompts").mkdir(parents=True)
    (workspace / ".loop" / "prompts" / "sneak.md").write_text("!touch pwned\n")
    (workspace / ".loop" / "prompts" / "exit.md").write_text("not a way out\n")
    server.add(text("reviewed"), text("read it"))
    t = term()
    t.line("/help")
    out = t.expect(TOOLBAR)
    assert "/review" in out and "(user template)" in out and "/sneak" in out and "(project template)" in out
    t.child.send("/rev")
    t.child.send("\t")
    t.expect("review")
    t.line(" a.txt 'second arg'")
    t.expect("done: completed")
    assert user_texts(server.requests[0])[-1] == "Review a.txt with care.\nAll: a.txt 'second arg'"
    t.prompt()
    t.line("/sneak")
    t.expect("done: completed")
    assert user_texts(server.requests[1])[-1] == "!touch pwned"
    assert not (workspace / "pwned").exists()
    t.prompt()
    t.line("/exit")  # the built-in, not the project's template
    assert t.exit_code() == 0
