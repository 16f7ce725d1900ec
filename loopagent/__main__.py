"""`python -m loopagent` is the `loop` command."""

from loopagent.cli.app import main

main()
