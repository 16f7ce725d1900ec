"""The interactive REPL (`loop agent` without a task): the prompt and its turns (repl.py), the slash
commands (commands.py: the table; slash*.py: the handlers), type-ahead, completion, `@path` mentions,
`!cmd`, prompt templates and the restores of /undo, /redo and /rewind.

Importing this package imports nothing else: a one-shot run that never prompts pays for none of it.
"""
