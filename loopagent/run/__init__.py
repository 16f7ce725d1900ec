"""The one place a run is put together; every front-end (one-shot, the REPL, replay, eval) calls in here.

`build` turns settings and a `Host` (what a run takes from its process: environment, home, streams,
transport, clock) into the parts of an agent and assembles the frozen agent; `discovery` resolves the
context size; `preflight` refuses a run that cannot start; `record` opens its session and checkpoints;
`launch` runs it to its end; `interrupts` turns signals into the running turn's cancel; `approve` is the
terminal's approver; `services` what the REPL is given of the run. Nothing here imports from `cli/`.
"""
