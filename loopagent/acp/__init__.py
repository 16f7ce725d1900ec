"""`loop acp`: loop as an Agent Client Protocol agent on stdio, a third front-end on `run/` beside the
one-shot run and the REPL (DESIGN.md "Agent Client Protocol").

`serve` owns the process (stdout kept for the protocol, logs); `agent` answers the protocol's methods;
`session` is one open loop run per ACP session; `feed` turns the run's events into session updates and
replays a saved session; `bridge` lets the run's threads call the client (permissions, the editor's
buffers) and be cancelled while they wait; `content` reads a prompt's blocks and the slash commands.
The SDK (`acp`) is imported only here, so no other command pays for it.
"""
