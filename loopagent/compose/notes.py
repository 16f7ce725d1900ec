"""The notes a switch of approval mode puts before the person's next message (`/plan` in the REPL, a mode
change from an editor in `loop acp`), so the model knows what it may do now."""

ON_NOTE = ("[plan mode is on: nothing may change the workspace. File writes are refused and shell commands run "
           "with the workspace read-only. Investigate, then answer with a plan.]")
OFF_NOTE = "[plan mode is off (approval {mode}): you may now change files and carry out the plan.]"
