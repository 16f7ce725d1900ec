"""The one place a run is put together; every front-end (one-shot, the REPL, replay, eval) calls in here.

`build` turns settings and a `Host` (what a run takes from its process: environment, home, streams,
transport, clock) into the parts of an agent and assembles the frozen agent; `discovery` resolves the
context size; `preflight` refuses a run that cannot start; `record` opens its session and checkpoints;
`run` opens a run (`open_run(spec, host)`: a `Run` owning the agent, its session file and lock,
checkpoints, hooks and MCP servers, with `run.turn(text, cancel)`); `launch` drives one to its end for
`loop agent`; `interrupts` turns signals into the running turn's cancel; `approve` is the terminal's
approver; `services` what the REPL is given of the run. Nothing here imports from `cli/`.
"""
