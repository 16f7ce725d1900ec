"""The interactive REPL (`loop agent` without a task).

repl.py is the prompt loop; state.py what it keeps between prompts, the only thing a slash command
takes; commands.py the one table of slash commands, whose handlers live in slash.py and slash_prompt.py;
run/services.py is what the run lends it (session file, checkpoints). Type-ahead, completion, `!cmd`,
the recap of a resumed session and the restores of /undo, /redo and /rewind have a module each; `@path`
mentions, prompt templates and the plan-mode notes live in loopagent/compose/, shared with `loop acp`. Imports go one way: repl -> commands -> handlers -> state.

Importing this package imports nothing else: a one-shot run that never prompts pays for none of it.
"""
