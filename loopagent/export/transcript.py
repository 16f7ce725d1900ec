"""A session file as the parts a readable transcript shows, for every output format alike.

The file is read with the session loader (so a transcript shows what `--resume` would continue);
the records that carry no message (run ends, checks, hooks, repairs, compactions) are kept in
their place between the messages: a check run mid-session (`/check`, a failing `--check` sent
back to the model) is an event there, and only the check the last run end names is its result.
A `task` call's child agent has a session file of its own beside its parent's; its transcript is nested
under the result of the call that started it (or one line saying why it cannot be shown).
Text stays untrusted here: each format escapes it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from loopagent.clip import clip
from loopagent.counts import counted
from loopagent.errors import SessionError
from loopagent.messages import AssistantMessage, Message, ToolCall, ToolResult, Usage
from loopagent.render.safe import printable
from loopagent.session.catalog import SUFFIX, parent_of, read_header
from loopagent.session.loader import Loaded, load

RESULT_LINES = (40, 20)  # head and tail lines of a result shown; the rest is behind a clip marker
RESULT_CHARS = (4000, 2000)  # ... and of characters, for results of a few enormous lines
DIFF_LINES = (400, 100)  # a diff is what a reader wants whole; only a huge one is clipped
NESTING = 3  # child transcripts nested at most this deep (a task child starts none; an edited file might)
# A session id as `new_path` makes it: a plain file name, so a result's id never reaches outside the directory
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


@dataclass(frozen=True)
class Totals:
    steps: int  # model replies
    calls: int
    failed: int  # calls whose result is an error
    usage: Usage
    cost: float | None  # USD, summed over the runs that had a price


@dataclass
class Transcript:
    """What an export shows: the header's facts, the items in order, the final status and the totals."""

    id: str
    header: dict
    items: list[Message | dict] = field(default_factory=list)  # a dict is a record (end, check, hook ...)
    status: str = "unfinished"
    status_message: str = ""
    check: dict | None = None  # the last run end's completion check: {command, passed, attempts}
    totals: Totals = Totals(0, 0, 0, Usage(), None)
    calls: dict[str, ToolCall] = field(default_factory=dict)  # by id: the call a result answers
    agent: str = ""  # a task child's agent, as its header names it
    # by the id of the `task` call that started each: the child's transcript, or why it cannot be shown
    children: dict[str, Transcript | str] = field(default_factory=dict)

    @property
    def task(self) -> str:
        first = next((m.content for m in self.items if getattr(m, "role", "") == "user"), "")
        return str(self.header.get("task") or "") or first


def transcript(path: Path) -> Transcript:
    """Read a session file (raises SessionError when it is missing or corrupt) into a Transcript, with the
    transcripts of the child agents it started (a child that cannot be read is a line, never an error)."""
    loaded = load(path)
    t = of(loaded)
    adopt(t, loaded, {path.resolve()}, NESTING)
    return t


def adopt(t: Transcript, loaded: Loaded, seen: set[Path], depth: int) -> None:
    """Attach to `t` the child of each `task` result that names a session. A child is looked for only
    beside its parent's file, so a session handed over by path never pulls in one of the reader's own;
    each file is shown once (`seen`), so no edited file can repeat or nest one without end."""
    for item in t.items:
        if isinstance(item, ToolResult) and item.name == "task" and item.details is not None and item.details.session:
            t.children[item.call_id] = child(item.details.session, loaded, seen, depth)


def child(session: str, parent: Loaded, seen: set[Path], depth: int) -> Transcript | str:
    """The transcript of the child session `session` of `parent`, or the one line saying why there is none."""
    if not SESSION_ID.fullmatch(session) or session.endswith(SUFFIX):
        return f"child session {session}: not a session id"
    path = parent.path.parent / f"{session}{SUFFIX}"
    if not path.is_file():
        return f"child session {session}: not found beside this session"
    if path.resolve() in seen:
        return f"child session {session}: shown once only, above"
    if depth < 1:
        return f"child session {session}: nested too deep to show"
    seen.add(path.resolve())
    try:
        loaded = load(path)
    except SessionError as exc:
        why = str(exc).replace(str(path), path.name).split("; not resuming", 1)[0]
        return f"child session {session}: unreadable: {why}"
    named = parent_of(loaded.header)
    if named is None or "agent" not in named or named["session"] not in lineage(parent):
        return f"child session {session}: its header does not name this session as its parent"
    t = of(loaded)
    t.agent = named["agent"]
    adopt(t, loaded, seen, depth - 1)
    return t


def lineage(loaded: Loaded) -> set[str]:
    """The ids a child of `loaded` may name as its parent: this session's (its file's and its header's) and,
    for a fork, those of the sessions it was forked from (a fork keeps its parent's task results)."""
    ids = {loaded.id, str(loaded.header.get("id") or "")}
    header = loaded.header
    for _ in range(20):
        up = parent_of(header)
        if up is None or "agent" in up or up["session"] in ids or not SESSION_ID.fullmatch(up["session"]):
            break
        ids.add(up["session"])
        header = read_header(loaded.path.parent / f"{up['session']}{SUFFIX}")
    return ids - {""}


def session_id(loaded: Loaded) -> str:
    """The id to title the transcript with: the file's name, which `--resume` and `loop sessions` use,
    unless the file was copied under another name (then the header's id). An interactive session is
    renamed after its first task, so its header still holds the first name (`<stamp>-session`)."""
    recorded = str(loaded.header.get("id") or "")
    stamp = recorded.split("-", 1)[0]
    return loaded.id if not recorded or (stamp and loaded.id.startswith(stamp + "-")) else recorded


def of(loaded: Loaded) -> Transcript:
    """The Transcript of a loaded session."""
    out = Transcript(session_id(loaded), loaded.header)
    records = list(loaded.records)
    for index, message in enumerate(loaded.history):
        while records and records[0][0] <= index:
            out.items.append(records.pop(0)[1])
        out.items.append(message)
    out.items.extend(record for _, record in records)
    ends = [r for r in out.items if isinstance(r, dict) and r.get("type") == "end"]
    if ends:
        out.status, out.status_message = str(ends[-1].get("status", "?")), str(ends[-1].get("message") or "")
    if ends and isinstance(ends[-1].get("check"), dict):
        out.check = ends[-1]["check"]
    replies = [m for m in loaded.history if isinstance(m, AssistantMessage)]
    results = [m for m in loaded.history if isinstance(m, ToolResult)]
    out.calls = {c.id: c for m in replies for c in m.tool_calls}
    usage = sum((m.usage for m in replies if m.usage), Usage())
    costs = [r["cost"] for r in ends if isinstance(r.get("cost"), int | float)]
    out.totals = Totals(len(replies), len(out.calls), sum(r.is_error for r in results), usage,
                        sum(costs) if costs else None)
    return out


def arguments(call: ToolCall) -> str:
    """A call's arguments, indented JSON when they parse (the model's raw text when not)."""
    try:
        return json.dumps(json.loads(call.arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return call.arguments


def shown(text: str) -> str:
    """Untrusted text with terminal controls made visible and a long one clipped with the marker."""
    text = clip(text, *RESULT_LINES, lines=True)
    return printable(clip(text, *RESULT_CHARS))


def diff_of(result: ToolResult) -> str:
    """The unified diff of a write or edit ('' for other calls), clipped only when it is enormous."""
    diff = result.details.diff if result.details is not None else ""
    return printable(clip(diff, *DIFF_LINES, lines=True)) if diff else ""


def outcome(result: ToolResult) -> str:
    """A result's outcome in a word or two: ok, error, denied, exit 1 ..."""
    details = result.details
    if details is not None and details.exit_code not in (None, 0):
        return f"exit {details.exit_code}"
    if details is not None and details.outcome != "ok":
        return details.outcome
    return "error" if result.is_error else "ok"


def record_line(record: dict) -> str:
    """A one-line account of a record that is not a message (a check's output is shown separately)."""
    kind = record.get("type", "?")
    if kind == "end":
        steps = record.get("steps")
        after = counted(steps, "step") if isinstance(steps, int) else "? steps"
        text = f"run ended: {record.get('status', '?')} after {after}"
        return text + (f": {record['message']}" if record.get("message") else "")
    if kind == "check":
        verdict = "passed" if record.get("passed", record.get("exit_code") == 0) else "failed"
        how = "timed out" if record.get("timed_out") else f"exit {record.get('exit_code', '?')}"
        attempt = f", attempt {record['attempt']}" if isinstance(record.get("attempt"), int) else ""
        return f"check {verdict}: {record.get('command', '')} ({how}{attempt})"
    if kind == "hook":
        return f"hook {record.get('kind', '')} {record.get('command', '')}: {record.get('verdict', '')}"
    if kind == "compacted":
        return f"context compacted: {record.get('tokens_before')} -> {record.get('tokens_after')} tokens"
    if kind == "repair":
        return f"repair: {record.get('text', '')}"
    if kind == "edit":
        return "context edited"
    return f"{kind} record"


def origin(header: dict) -> tuple[str, str] | None:
    """Where a session came from, as a fact: the session it was forked from, or the one whose `task`
    call started it (None: neither)."""
    parent, up = header.get("parent"), parent_of(header)
    if not isinstance(parent, dict):
        return None
    if up is None:  # an edited header: shown as it was written (escaped by each format)
        return "forked from", f"{parent.get('session')} at message {parent.get('message')}"
    if "agent" in up:
        return "started by", f"{up['session']} (its task call to agent {up['agent']} at message {up['message']})"
    return "forked from", f"{up['session']} at message {up['message']}"


def child_line(t: Transcript) -> str:
    """A child's outcome in one line: its status (and why it stopped), its steps and tokens."""
    why = f" ({t.status_message})" if t.status_message else ""
    return f"{t.status}{why}; {total_line(t.totals)}"


def children_totals(t: Transcript) -> Totals | None:
    """What the child agents shown in `t` (and theirs) spent together; None when there are none."""
    found = [c for c in t.children.values() if isinstance(c, Transcript)]
    if not found:
        return None
    parts = [c.totals for c in found] + [s for c in found if (s := children_totals(c)) is not None]
    costs = [p.cost for p in parts if p.cost is not None]
    return Totals(sum(p.steps for p in parts), sum(p.calls for p in parts), sum(p.failed for p in parts),
                  sum((p.usage for p in parts), Usage()), sum(costs) if costs else None)


def check_line(check: dict) -> str:
    """The run's completion check in one line: its verdict, its command and how many runs it took."""
    verdict = "passed" if check.get("passed") else "failed"
    attempts = check.get("attempts")
    runs = f" ({counted(attempts, 'run')})" if isinstance(attempts, int) and attempts > 1 else ""
    return f"check {verdict}: {check.get('command', '')}{runs}"


def total_line(t: Totals) -> str:
    """The totals in one line."""
    cost = f", ${t.cost:.4f}" if t.cost is not None else ""
    return (f"{counted(t.steps, 'model reply', 'model replies')}, {counted(t.calls, 'tool call')} ({t.failed} "
            f"failed), {t.usage.prompt_tokens} prompt + {t.usage.completion_tokens} completion tokens{cost}")
