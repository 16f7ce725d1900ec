"""`loop eval SUITE`: run a suite of tasks headless, each on a fresh copy of its repo, then its check."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from loopagent.render.safe import printable

EXAMPLE = "example/suite.toml"  # inside loopagent/eval: three tasks on the demo sample, recorded turns


def fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"loop: {printable(message)}", err=True)
    return typer.Exit(code)


def agent_flags(values: dict, example: bool):
    """The flags every run gets, typed (run/spec.py `Flags`, as `loop agent` makes them); approval `all`
    unless told (a headless run cannot ask)."""
    from loopagent.run.spec import Flags

    if example and values.get("sandbox") is None:
        from loopagent.demo.run import demo_sandbox
        from loopagent.eval.task import interpreter_path

        values["sandbox"] = demo_sandbox(interpreter_path())  # recorded turns are ours, as in `loop demo`
    ctx_size, lower = values["ctx_size"], {k: (values[k] or "").lower() or None for k in ("sandbox", "provider")}
    return Flags(approval=(values["approval"] or "all").lower(), base_url=values["base_url"], model=values["model"],
                 ctx_size=int(ctx_size) if ctx_size and ctx_size.isdigit() else ctx_size, **lower,
                 sandbox_network=True if values["network"] else None)


def output_dir(out: Path | None, resume: Path | None, suite: Path, example: bool) -> Path:
    """Where results go: --resume DIR, else --out DIR, else a new directory named for the suite and time."""
    if resume is not None:
        if out is not None and out.resolve() != resume.resolve():
            raise fail("give --out or --resume, not both (--resume DIR writes into DIR)")
        from loopagent.eval.results import is_eval_dir

        if not is_eval_dir(resume):
            raise fail(f"--resume {resume}: not an eval's output directory (no results.jsonl or eval.json there)")
        return resume
    if out is not None:
        return out
    stamp = time.strftime("%Y%m%d-%H%M%S")
    if example:
        import tempfile

        return Path(tempfile.mkdtemp(prefix=f"loop-eval-example-{stamp}-"))
    return Path("loop-eval") / f"{suite.stem}-{stamp}"


def register(app: typer.Typer) -> None:
    """Add `loop eval` to the app."""

    @app.command("eval")
    def eval_(
        suite: Annotated[Path | None, typer.Argument(metavar="SUITE", show_default=False,
                                                     help="A suite TOML file ([[task]] tables).")] = None,
        jobs: Annotated[int, typer.Option("-j", "--jobs", metavar="N", min=1, help="Runs at a time on this machine.")] = 1,
        dask: Annotated[str | None, typer.Option(
            "--dask", metavar="ADDRESS|local:N",
            help="Run on Dask distributed: a scheduler (tcp://HOST:8786) or local:N, a LocalCluster of N workers.")] = None,
        out: Annotated[Path | None, typer.Option("--out", metavar="DIR", help="Output directory. [default: loop-eval/SUITE-TIME]")] = None,
        resume: Annotated[Path | None, typer.Option("--resume", metavar="DIR", help="Continue an eval in DIR: skip the runs it holds.")] = None,
        repeat: Annotated[int, typer.Option("--repeat", metavar="K", min=1, help="Runs per task (pass@K in the summary).")] = 1,
        example: Annotated[bool, typer.Option("--example", help="Run the bundled three-task example suite (no server).")] = False,
        base_url: Annotated[str | None, typer.Option("--base-url", metavar="URL", help="OpenAI-compatible endpoint for every run.")] = None,
        model: Annotated[str | None, typer.Option("-m", "--model", metavar="NAME", help="Model name sent to the server.")] = None,
        api_key: Annotated[str | None, typer.Option("--api-key", metavar="KEY", help="API key; else LOOP_API_KEY, else OPENAI_API_KEY.")] = None,
        approval: Annotated[str | None, typer.Option("--approval", metavar="MODE", help="ask, edits or all. [default: all]")] = None,
        max_steps: Annotated[int | None, typer.Option("--max-steps", metavar="N", min=1, help="Step limit of tasks without their own.")] = None,
        timeout: Annotated[float | None, typer.Option("--timeout", metavar="SECONDS", help="Wall-clock limit of tasks without their own.")] = None,
        sandbox: Annotated[str | None, typer.Option("--sandbox", metavar="MODE", help="workspace-write (default), read-only or off.")] = None,
        network: Annotated[bool, typer.Option("--network", help="Let sandboxed shell commands use the network.")] = False,
        provider: Annotated[str | None, typer.Option("--provider", metavar="NAME", help="openai or ollama.")] = None,
        ctx_size: Annotated[str | None, typer.Option("--ctx-size", metavar="auto|TOKENS", help="Context window of each run.")] = None,
    ) -> None:
        """Run every task of SUITE headless on its own copy of its repo, then its check: verified or not.

        Writes results.jsonl (one line per run), each run's session and diff, and report.md.
        Exit 0 when every run was carried out (whatever its verdict), 1 on a harness failure.
        """
        agent = {"approval": approval, "base_url": base_url, "model": model, "api_key": api_key, "sandbox": sandbox,
                 "network": network, "provider": provider, "ctx_size": ctx_size}
        raise typer.Exit(carry_out(suite, example, dask, agent, out=out, resume=resume, jobs=jobs, repeat=repeat,
                                   max_steps=max_steps, timeout=timeout))


def carry_out(suite: Path | None, example: bool, dask: str | None, agent: dict, out: Path | None,
              resume: Path | None, **limits) -> int:
    """Check the command line (bad input: one line, exit 2), then run the eval; its exit code."""
    from rich.console import Console

    from loopagent.eval.cluster import INSTALL, DaskUsage, MissingDask, local_workers
    from loopagent.eval.driver import EvalOptions, run_eval
    from loopagent.eval.suite import SuiteError
    from loopagent.policy import MODES

    if example == (suite is not None):
        raise fail("give a SUITE file or --example (see 'loop eval --help')")
    if limits["timeout"] is not None and limits["timeout"] <= 0:
        raise fail(f"--timeout must be a positive number of seconds, not {limits['timeout']:g}")
    if agent["approval"] is not None and agent["approval"].lower() not in MODES:
        raise fail(f"--approval must be ask, edits or all, not {agent['approval']!r}")
    if example:
        from importlib import resources

        suite = Path(str(resources.files("loopagent.eval") / EXAMPLE))
    try:
        if dask is not None:
            local_workers(dask)
            try:
                import distributed  # noqa: F401 - only to say at once when the extra is missing
            except ImportError:
                raise MissingDask(f"--dask needs Dask distributed: {INSTALL}") from None
        api_key = agent.pop("api_key")  # to the runs' environment, never their command line
        flags = agent_flags(agent, example)  # settles agent["sandbox"] too (the example's)
        opts = EvalOptions(suite=suite, out=output_dir(out, resume, suite, example), dask=dask, flags=flags,
                           api_key=api_key, check_sandbox="off" if str(agent["sandbox"]).lower() == "off" else "workspace-write",
                           **limits)
        return run_eval(opts, Console(highlight=False))
    except (SuiteError, DaskUsage) as exc:
        raise fail(str(exc)) from None
