"""Skills at the REPL: Tab completes `/skill:` and `$` names; `/skill:NAME text` and `$NAME` load the skill
into the message before the model is asked, once per conversation."""

from __future__ import annotations

from pathlib import Path

from prompt_toolkit.document import Document

from loopagent.cli.repl.complete import ReplCompleter
from tests.fakeserver import text, user_texts


def completions(typed: str) -> list[str]:
    completer = ReplCompleter({"/help": "", "/skill:release": "skill: How we release."}, None,
                              skills={"release": "How we release.", "review": "How we review."})
    return [c.text for c in completer.get_completions(Document(typed), None)]


def test_tab_offers_skill_names_after_a_dollar_and_after_skill_colon():
    assert completions("/sk") == ["/skill:release"]
    assert completions("use $re") == ["$release", "$review"]
    assert completions("use $rel") == ["$release"]
    assert completions("use $release") == [] and completions("costs $5") == [] and completions("re") == []


def test_skill_command_and_dollar_name_on_a_pty(terminal, server, workspace: Path):
    folder = workspace / ".agents" / "skills" / "release"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: release\ndescription: How we release.\n---\nREPL-RELEASE-BODY\n")
    server.add(text("Shipped."), text("Again."))
    t = terminal(wait_prompt=True)
    t.child.send("/skill:rel")
    t.child.send("\t")  # the only candidate: inserted at once
    t.line(" ship it")
    t.expect("Shipped.")
    t.prompt()
    sent = user_texts(server.requests[0])[-1]
    assert sent.startswith('$release ship it\n\n<skill name="release"') and "REPL-RELEASE-BODY" in sent
    t.child.send("and again $rel")
    t.child.send("\t")
    t.line("")
    t.expect("skill release is already loaded")
    t.expect("Again.")
    t.prompt()
    assert user_texts(server.requests[1])[-1] == "and again $release"
    t.line("/skill:nope")
    t.expect("unknown skill 'nope'")
    t.prompt()
    t.child.sendcontrol("d")
    assert t.exit_code() == 0
    assert len(server.requests) == 2  # an unknown skill asks the model nothing
