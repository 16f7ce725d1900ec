"""`loop review`: a headless, read-only run over a diff whose findings fail a CI job.

    loop review [--uncommitted | --base BRANCH | --commit SHA] [--fail-on P0..P3] [--json] [agent flags]

Prints `path:line: P1 title` lines (the body indented under each; or one JSON object with --json) on
stdout, what the model did on stderr, and exits 1 when a finding at or above --fail-on exists, 0 when
none, 2 for a bad revision or flag, and the run's own code when the run itself failed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Annotated

import typer

# Where loop has no plan mode ("nothing can change the workspace", DESIGN.md) the review runs in mode ask
# with no one to ask, and denies writes and shell commands by rule: a denial by rule is a result the model
# reads, not a headless refusal that would end the run `approval_required`.
READ_ONLY_DENY = ["write_file(*)", "edit_file(*)", "*"]
GIT_TIMEOUT = 60
MAX_UNTRACKED_BYTES = 200_000  # an untracked file larger than this is named, not shown


Workspace = Annotated[Path | None, typer.Option(
    "-C", "--workspace", metavar="DIR", show_default=False,
    help="The repository to review. [default: the git repository around the current directory]")]


def register(app: typer.Typer) -> None:
    @app.command(short_help="Review a change; exit 1 on findings at or above --fail-on (a CI gate).")
    def review(
        uncommitted: Annotated[bool, typer.Option(
            "--uncommitted", help="Review the changes not yet committed (the default).")] = False,
        base: Annotated[str | None, typer.Option(
            "--base", metavar="BRANCH", help="Review the changes since the merge base with BRANCH.")] = None,
        commit: Annotated[str | None, typer.Option("--commit", metavar="SHA", help="Review one commit.")] = None,
        fail_on: Annotated[str, typer.Option(
            "--fail-on", metavar="P0..P3", help="Exit 1 when a finding this severe or worse exists. [default: P1]",
            show_default=False)] = "P1",
        json_out: Annotated[bool, typer.Option("--json", help="One JSON object on stdout instead of lines.")] = False,
        workspace: Workspace = None,
        base_url: Annotated[str | None, typer.Option(
            "--base-url", metavar="URL", help="OpenAI-compatible endpoint. [default: http://127.0.0.1:8080/v1]")] = None,
        model: Annotated[str | None, typer.Option(
            "-m", "--model", metavar="NAME", help="Model name sent to the server. [default: default]")] = None,
        api_key: Annotated[str | None, typer.Option(
            "--api-key", metavar="KEY", help="API key; else LOOP_API_KEY, else OPENAI_API_KEY. Never printed.")] = None,
        ctx_size: Annotated[str | None, typer.Option(
            "--ctx-size", metavar="auto|TOKENS", help="Context window; auto asks the server. [default: auto]")] = None,
        provider: Annotated[str | None, typer.Option(
            "--provider", metavar="NAME", help="openai or ollama. [default: openai]")] = None,
        max_steps: Annotated[int | None, typer.Option(
            "--max-steps", metavar="N", help="Model requests before the run stops. [default: 30]")] = None,
        timeout: Annotated[float | None, typer.Option(
            "--timeout", metavar="SECONDS", help="Wall-clock limit of the review. [default: none]")] = None,
    ) -> None:
        """Review a change with the model, read-only, and print its findings as `path:line: P1 title`.

        Exit 1 when a finding at or above --fail-on exists, 0 when none, 2 for a bad revision.
        """
        from loopagent.cli.workspace import find_workspace
        from loopagent.errors import UsageError
        from loopagent.run.build import Host
        from loopagent.run.spec import Flags

        if sum([uncommitted, base is not None, commit is not None]) > 1:
            raise fail("give one of --uncommitted, --base and --commit")
        size = int(ctx_size) if ctx_size and ctx_size.isdigit() else ctx_size
        flags = Flags(base_url=base_url, model=model, api_key=api_key, ctx_size=size, provider=provider,
                      max_steps=max_steps, timeout=timeout)
        root, _ = find_workspace(workspace, Path.cwd())
        try:
            code = run_review(root, ("base", base) if base else ("commit", commit) if commit else ("uncommitted", ""),
                              fail_on.upper(), json_out, flags, Host.current())
        except UsageError as exc:
            raise fail(str(exc)) from None
        raise typer.Exit(code)


def fail(message: str) -> typer.Exit:
    """One line naming the problem on stderr, exit 2."""
    from loopagent.render.safe import printable

    typer.echo(f"loop: {printable(message)}", err=True)
    return typer.Exit(2)


def run_review(root: Path, choice: tuple[str, str], fail_on: str, json_out: bool, flags, host) -> int:
    """Collect the diff, run the read-only review, print its verdict; the exit code. Raises UsageError for a
    bad revision or flag (exit 2)."""
    from loopagent.errors import UsageError
    from loopagent.events import RunEnd
    from loopagent.output.review import FINDINGS_SCHEMA, SEVERITIES, Verdict, diff_budget, review_task
    from loopagent.run.launch import run_agent
    from loopagent.run.spec import RunSpec

    if fail_on not in SEVERITIES:
        raise UsageError(f"--fail-on {fail_on}: give one of {', '.join(SEVERITIES)}")
    diff, what = collect_diff(root, *choice)
    if not diff.strip():
        print(f"review: nothing to review ({what} has no changes)", file=host.err)
        return 0
    ends: list[RunEnd] = []
    with tempfile.TemporaryDirectory(prefix="loop-review-") as tmp:
        schema = Path(tmp) / "findings.schema.json"
        schema.write_text(json.dumps(FINDINGS_SCHEMA))
        budget = diff_budget(flags.ctx_size if isinstance(flags.ctx_size, int) else 16384)
        approval, deny = read_only()
        spec = RunSpec(task=review_task(diff, what, budget), workspace=root, flags=dataclasses.replace(
            flags, approval=approval, output_schema=str(schema), checkpoints=False))
        code = run_agent(spec, [lambda e: ends.append(e) if isinstance(e, RunEnd) else None], headless(host, deny))
    if not ends or ends[-1].output is None:  # the run failed: its own message and exit code stand
        status = ends[-1].status if ends else "error"
        print(f"loop: review: no findings: the run ended {status}", file=host.err)
        if json_out:
            print(json.dumps({"error": f"the run ended {status}", "status": status, "exit_code": code or 1}),
                  file=host.out, flush=True)
        return code or 1
    verdict = Verdict(ends[-1].output.value["findings"], ends[-1].output.value["summary"], fail_on)
    if shown := verdict.as_json() if json_out else "\n".join(verdict.lines()):  # no findings: no lines
        print(shown, file=host.out, flush=True)
    print(verdict.tally(), file=host.err)
    return verdict.exit_code


def read_only() -> tuple[str, list[str]]:
    """The review's approval mode and its deny rules: plan mode where loop has it (commands run in a sandbox that
    binds the workspace read-only); else mode ask, writes and shell commands denied by rule."""
    from loopagent.policy import MODES

    return ("plan", []) if "plan" in MODES else ("ask", READ_ONLY_DENY)


def headless(host, deny: list[str]):
    """`host` for the review's run: no one to ask, the transcript on stderr (stdout is the findings'), `deny`
    on top of the user's own deny rules."""
    if not deny:
        return dataclasses.replace(host, out=host.err, stdin_tty=False, stdout_tty=False)
    rules = [*user_rules(host.env.get("LOOP_DENY", "")), *deny]
    return dataclasses.replace(host, out=host.err, stdin_tty=False, stdout_tty=False,
                               env={**host.env, "LOOP_DENY": json.dumps(rules)})


def user_rules(raw: str) -> list[str]:
    try:
        rules = json.loads(raw) if raw.strip() else []
    except ValueError:
        return [raw]  # let the config layer say what is wrong with it
    return rules if isinstance(rules, list) else [raw]


def collect_diff(root: Path, kind: str, rev: str) -> tuple[str, str]:
    """(diff, what it is) for `kind` uncommitted | base | commit; raises UsageError for a bad revision."""
    from loopagent.errors import UsageError

    if git(root, "rev-parse", "--git-dir", check=False) is None:
        raise UsageError(f"{root} is not inside a git repository")
    options = ("--no-color", "--no-ext-diff", "--no-textconv")
    if kind == "commit":
        sha = verified(root, rev, "--commit")
        return git(root, "show", *options, "--format=commit %H%n%n    %s%n", sha, "--") or "", f"commit {rev}"
    if kind == "base":
        verified(root, rev, "--base")
        merge_base = git(root, "merge-base", rev, "HEAD", check=False)
        if merge_base is None:
            raise UsageError(f"--base {rev}: no merge base with HEAD")
        return git(root, "diff", *options, merge_base.strip(), "--") or "", f"the changes since {rev}"
    head = "HEAD" if git(root, "rev-parse", "--verify", "-q", "HEAD", check=False) is not None else \
        git(root, "hash-object", "-t", "tree", os.devnull).strip()  # no commit yet: all is new
    return (git(root, "diff", *options, head, "--") or "") + untracked(root), "the uncommitted changes"


def verified(root: Path, rev: str, flag: str) -> str:
    from loopagent.errors import UsageError

    sha = git(root, "rev-parse", "--verify", "-q", "--end-of-options", f"{rev}^{{commit}}", check=False)
    if sha is None or rev.startswith("-"):
        raise UsageError(f"{flag} {rev}: not a revision in {root}")
    return sha.strip()


def untracked(root: Path) -> str:
    """New files git does not track yet, as diffs of added files (a large or binary one is named only)."""
    names = (git(root, "ls-files", "--others", "--exclude-standard", "-z") or "").split("\0")
    out = []
    for name in filter(None, names):
        path = root / name
        try:
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
            text = data.decode("utf-8") if len(data) <= MAX_UNTRACKED_BYTES else None
        except (OSError, UnicodeDecodeError):
            text = None
        body = "" if text is None else "".join(f"+{line}\n" for line in text.splitlines())
        note = f"@@ new file, {len(text.splitlines())} lines @@\n" if text else "(binary or large file, not shown)\n"
        out.append(f"diff --git a/{name} b/{name}\nnew file (untracked)\n--- /dev/null\n+++ b/{name}\n{note}{body}")
    return "".join(out)


def git(root: Path, *args: str, check: bool = True) -> str | None:
    """git's output, run outside the sandbox on a repository that may be hostile: its pager, fsmonitor, hooks
    and external diff programs pinned off, PATH without relative entries. None when it fails and not `check`."""
    from loopagent.checkpoint.shadow import git_program, pinned_config
    from loopagent.errors import UsageError
    from loopagent.spawn import safe_env

    env = {**safe_env(), **pinned_config(), "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
    try:
        done = subprocess.run([git_program(), *args], cwd=root, env=env, capture_output=True, timeout=GIT_TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"cannot run git: {exc}") from None
    if done.returncode != 0:
        if check:
            raise UsageError(f"git {args[0]} failed: {done.stderr.decode(errors='replace').strip()[-300:]}")
        return None
    return done.stdout.decode("utf-8", errors="replace")
