"""`python -m loopagent` and the `loop` console script: secrets out of reach first, then the CLI."""


def main() -> None:
    """Hide secrets from /proc (this may re-execute the process), then run the `loop` command."""
    from loopagent.secrets import conceal

    conceal()
    from loopagent.cli.app import main as run_cli

    run_cli()


if __name__ == "__main__":
    main()
