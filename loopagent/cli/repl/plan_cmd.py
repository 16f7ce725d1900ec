"""`/plan`: approval mode plan on or off (DESIGN "Modes, plans and delegation"). The conversation stays:
leaving plan mode, the plan is the last answer and the model is told it may now carry it out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loopagent.compose.notes import OFF_NOTE, ON_NOTE

if TYPE_CHECKING:
    from loopagent.cli.repl.state import ReplState



def plan(repl: ReplState, arg: str, prompt: Any) -> None:
    """`/plan` turns plan mode on, or off again (back to the mode before it); `/plan on|off` says which."""
    policy = repl.agent.policy
    word = arg.lower() or ("off" if policy.mode == "plan" else "on")
    if word not in ("on", "off"):
        repl.renderer.say("error: /plan takes on or off (or nothing: switch)", "red")
        return
    if (word == "on") == (policy.mode == "plan"):
        repl.renderer.say(f"approval: {policy.mode}")
        return
    before = policy.mode
    # off: back to the mode before /plan; a run that started in plan mode goes to the default, edits
    back = getattr(repl, "before_plan", "") or repl.settings.approval
    target = "plan" if word == "on" else back if back != "plan" else "edits"
    if why := policy.switch(target):
        repl.renderer.say(f"error: {why}", "red")
        return
    repl.before_plan = before if word == "on" else ""  # type: ignore[attr-defined]
    repl.context_notes.append(ON_NOTE if word == "on" else OFF_NOTE.format(mode=target))
    repl.renderer.say(f"approval: {target}" + (" (plan mode: the workspace is read-only)" if word == "on" else ""))
