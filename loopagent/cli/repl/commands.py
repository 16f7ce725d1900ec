"""What a `/NAME` line means: a built-in command of the one table below, else one of the person's
prompt templates (compose/templates.py), else an error naming the commands.

The table is the only list of commands: /help, the completer and the names templates may not take all
read it. Each handler is a function (repl, argument, prompt) -> an exit code (ends the REPL) or None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loopagent.cli.repl import plan_cmd, slash, slash_prompt

if TYPE_CHECKING:
    from loopagent.cli.repl.state import ReplState
    from loopagent.compose.templates import Template

Handler = Callable[["ReplState", str, Any], "int | None"]


@dataclass(frozen=True)
class Command:
    run: Handler
    help: str


def show_help(repl: ReplState, arg: str, prompt: Any) -> None:
    for name, cmd in COMMANDS.items():
        repl.renderer.say(f"  {name:<13} {cmd.help}")
    for name, found in templates_of(repl).items():  # the person's prompt templates
        repl.renderer.say(f"  {name:<13} {found.help}")
    if skills := skills_of(repl):
        repl.renderer.say(f"  {SKILL + 'NAME':<13} load a skill, then send the rest of the line (or $NAME in a "
                          f"message): {', '.join(skills)}")
    repl.renderer.say("  Esc+Enter or a trailing \\ adds a line; Ctrl+C cancels a turn; Ctrl+D exits.", "dim")


COMMANDS: dict[str, Command] = {
    "/help": Command(show_help, "list the commands"),
    "/exit": Command(slash.leave, "leave (exit code 0)"),
    "/model": Command(slash.model, "show or switch the model: /model NAME"),
    "/approval": Command(slash.approval, "show or switch the approval mode: /approval ask|edits|all|plan"),
    "/plan": Command(plan_cmd.plan, "plan mode on or off: read and run, change nothing (/plan on|off)"),
    "/tokens": Command(slash.tokens, "tokens per step (model request) and the share of tool results"),
    "/compact": Command(slash.compact, "summarise older turns now: /compact [focus]"),
    "/clear": Command(slash.clear, "start a new conversation (a new session)"),
    "/sessions": Command(slash.sessions, "list this workspace's sessions"),
    "/checkpoints": Command(slash.checkpoints, "list checkpoints, newest first"),
    "/undo": Command(slash.undo, "restore the files to the latest checkpoint"),
    "/redo": Command(slash.redo, "reverse the last undo"),
    "/diff": Command(slash.diff, "the change to the files since the session started"),
    "/rewind": Command(slash.rewind, "go back to an earlier message: conversation, files, or both"),
    "/check": Command(slash.run_check, "run the completion check now (/check CMD: that command)"),
    "/fork": Command(slash.fork, "continue in a new session branched from this one (this one is kept)"),
    "/export": Command(slash.export, "write this session as a transcript: /export [FILE] (.md or .html)"),
    "/edit": Command(slash_prompt.edit, "write the next message in $VISUAL or $EDITOR (also Ctrl+X Ctrl+E)"),
    "/init": Command(slash_prompt.init, "draft an AGENTS.md for this repository, shown as a diff before it is written"),
}


def dispatch(repl: ReplState, line: str, prompt: Any) -> int | None:
    """Run one slash command line; an exit code ends the REPL. Errors are one line, never a traceback."""
    name, _, arg = line.strip().partition(" ")
    cmd = COMMANDS.get(name)
    if cmd is None:
        repl.renderer.say(f"unknown command {name}; commands: {' '.join(COMMANDS)}", "red")
        return None
    try:
        return cmd.run(repl, arg.strip(), prompt)
    except Exception as exc:  # a failing command must not end the session
        repl.renderer.say(f"error: {name} failed: {exc}", "red")
        return None


def templates_of(repl: ReplState) -> dict[str, Template]:
    """The person's prompt templates, by command name (loaded afresh: a file added meanwhile counts);
    a built-in command keeps its name."""
    from loopagent.compose.templates import templates
    from loopagent.config import loop_home

    workspace = getattr(repl.agent.tools.workspace, "root", None)
    return templates(loop_home(), workspace, set(COMMANDS))


SKILL = "/skill:"  # `/skill:NAME [text]` sends `$NAME [text]`: the skill is loaded before the model is asked


def skills_of(repl: ReplState) -> dict[str, str]:
    """The run's skills (the ones `$NAME` loads), name -> description; {} when it has none."""
    from loopagent.skills import SkillBook

    book = repl.agent.steering.skills
    return {s.name: s.description for s in book.found.skills} if isinstance(book, SkillBook) else {}


def template_text(repl: ReplState, line: str) -> str | None:
    """The message a `/NAME args` line of a template (or `/skill:NAME args`) stands for; None when NAME is
    neither."""
    from loopagent.compose.templates import expand

    name, _, arguments = line.strip().partition(" ")
    if name.startswith(SKILL):
        skill = name[len(SKILL):]
        if skill in skills_of(repl):
            return f"${skill} {arguments.strip()}".strip()
        repl.renderer.say(f"unknown skill {skill!r}; `loop skills` lists the skills and what is wrong with any "
                          "left out", "red")
        return ""
    found = templates_of(repl).get(name)
    if found is None:
        return None
    try:
        return expand(found.text(), arguments.strip())
    except OSError as exc:
        repl.renderer.say(f"error: cannot read {found.path}: {exc.strerror}", "red")
        return ""
