"""The suite file: TOML `[[task]]` tables (DESIGN.md "Eval suites"), read into typed tasks."""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

KEYS = {"id", "prompt", "repo", "check", "setup", "max_steps", "timeout", "check_timeout", "replay", "expect_skill"}
REQUIRED = ("id", "prompt", "repo", "check")


class SuiteError(ValueError):
    """A suite file that cannot be run; the message names the file and the problem."""


@dataclass(frozen=True)
class Task:
    id: str
    prompt: str
    repo: Path  # resolved against the suite file's directory
    check: str
    setup: str | None = None
    max_steps: int | None = None
    timeout: float | None = None
    check_timeout: float = 600.0
    replay: Path | None = None  # recorded model turns for `--replay` (a recording or a session file)
    expect_skill: str | None = None  # a skill the run should load: its result line says whether it did


def load_suite(path: Path) -> list[Task]:
    """The tasks of the suite at `path`; SuiteError naming the file and the first problem."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{path}: not valid TOML ({exc})") from None
    tables = data.get("task")
    if not isinstance(tables, list) or not tables:
        raise SuiteError(f"{path}: no [[task]] tables")
    tasks, seen = [], set()
    for n, table in enumerate(tables, 1):
        task = _task(path, n, table)
        if task.id in seen:
            raise SuiteError(f"{path}: task {n}: id {task.id!r} is used twice")
        seen.add(task.id)
        tasks.append(task)
    return tasks


def _task(path: Path, n: int, table: dict) -> Task:
    where = f"{path}: task {n}"
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise SuiteError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(KEYS))})")
    for key in REQUIRED:
        if not isinstance(table.get(key), str) or not table[key].strip():
            raise SuiteError(f"{where}: {key!r} is missing or not a non-empty string")
    if table.get("setup") is not None and not isinstance(table["setup"], str):
        raise SuiteError(f"{where}: 'setup' must be a string (a shell command)")
    limits = {key: _positive(where, key, table.get(key)) for key in ("max_steps", "timeout", "check_timeout")}
    if limits["max_steps"] is not None and not isinstance(table["max_steps"], int):
        raise SuiteError(f"{where}: 'max_steps' must be a whole number")
    base = path.resolve().parent
    repo = base / table["repo"]
    if not repo.is_dir():
        raise SuiteError(f"{where}: repo {table['repo']!r} is not a directory (looked at {repo})")
    replay = None
    if table.get("replay") is not None:
        if not isinstance(table["replay"], str) or not (base / table["replay"]).is_file():
            raise SuiteError(f"{where}: replay {table['replay']!r} is not a file")
        replay = base / table["replay"]
    expect = table.get("expect_skill")
    if expect is not None and (not isinstance(expect, str) or not expect.strip()):
        raise SuiteError(f"{where}: 'expect_skill' must be a skill's name")
    return Task(id=table["id"], prompt=table["prompt"], repo=repo, check=table["check"], setup=table.get("setup"),
                max_steps=limits["max_steps"], timeout=limits["timeout"],
                check_timeout=limits["check_timeout"] or 600.0, replay=replay, expect_skill=expect)


def digest(task: Task) -> str:
    """A short fingerprint of what the task asks (prompt, check, setup, limits, recorded turns): a resumed
    eval must not count runs of a task that has changed since they were recorded as runs of the new one."""
    replay = hashlib.sha256(task.replay.read_bytes()).hexdigest() if task.replay is not None else None
    what = [task.prompt, task.check, task.setup, task.max_steps, task.timeout, task.check_timeout, replay]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:16]


def resumable(path: Path, results: Path, tasks: list[Task], lines: list[dict]) -> None:
    """SuiteError when recorded `lines` are not runs of these `tasks`: another suite's, or a changed task's."""
    digests = {task.id: digest(task) for task in tasks}
    for line in lines:
        if line["id"] not in digests:
            raise SuiteError(f"{results} holds runs of task {line['id']!r}, which {path} does not have: "
                             "resume with the suite that made them, or give a new --out")
        if line.get("task_digest", digests[line["id"]]) != digests[line["id"]]:
            raise SuiteError(f"{results}: task {line['id']!r} of {path} changed since its runs were recorded "
                             "there (prompt, check, setup, limits or turns): give a new --out")


def _positive(where: str, key: str, value: object) -> float | int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise SuiteError(f"{where}: {key!r} must be a positive number, not {value!r}")
    return value
