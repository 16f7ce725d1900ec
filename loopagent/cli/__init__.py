"""The `loop` command line: Typer app, one-shot runs, the interactive REPL."""
