"""`python -m loopagent` and the `loop` console script: secrets out of reach first, then the CLI."""


def main() -> None:
    """Hide secrets from /proc (this may re-execute the process), then run the `loop` command."""
    from loopagent.secrets import conceal

    conceal()
    import sys

    # httpx imports its own command line when it can (click, pygments, rich.console: ~55 ms of every
    # start); loop never uses it, and a None entry makes httpx take its documented fallback.
    sys.modules.setdefault("httpx._main", None)
    from loopagent.cli.app import main as run_cli

    run_cli()


if __name__ == "__main__":
    main()
