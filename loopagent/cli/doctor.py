"""`loop doctor`: a few short requests that tell whether loop can work with a model server, and how.

It asks, in order: GET /models (is anything there, does it want a key), the context size
(client/probe.py: one short request per endpoint), one streamed text request, one streamed and one
unstreamed request offering a tool, and one for a reply shaped by a JSON Schema: at most four chat
requests, each with a tiny prompt, a small max_tokens and a short timeout, sent by the same client a
run uses (no retries). What it learns (streamed tool calls, context size) goes to servers.json.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loopagent.lsp.servers import lsp_rows
from loopagent.render.safe import printable

TEXT_PROMPT = "Reply with the single word: ok"
# Shaped like a run's first request (a coding agent, read_file): small models call tools for that
# more readily than for a toy tool (gemma-3-270m on llama-cpp-python ignores a weather tool).
# The tool requests are a run's first request (loop's system prompt and tools), so the verdict is what a
# run meets: gemma-3-270m on llama-cpp-python answered a looser prompt empty although runs call tools.
TOOL_PROMPT = "Read README.md and tell me what it says."
TEXT_TOKENS, TOOL_TOKENS = 32, 64  # a tool call needs a little more room than "ok"
CONNECT_TIMEOUT, READ_TIMEOUT, GET_TIMEOUT = 3.0, 30.0, 5.0  # seconds; a local model may be busy or slow
DEFAULT_CTX = 16384
UNREACHABLE = "start a server there or pass --base-url URL"


@dataclass
class Probe:
    """One chat request's outcome: the reply, or why there was none, and its timing."""

    reply: Any = None  # AssistantMessage
    error: str = ""
    refused: bool = False  # an empty body, or "cannot use tools with stream": the server cannot stream tools
    start: float = 0.0
    first: float | None = None  # the first text or thinking delta
    end: float = 0.0


@dataclass
class Report:
    """What doctor found: the table's rows, the verdict and the settings loop will use."""

    url: str
    model: str
    provider: str
    rows: list[tuple[str, str, str]] = field(default_factory=list)  # (check, answer, detail)
    verdict: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)  # per setting: where its value comes from
    ok: bool = False
    hint: str = ""
    fatal: str = ""  # nothing to tabulate: the server cannot be reached or refuses us
    kind: str = ""  # the server software, when its model list or context endpoint says (client/probe.py)

    def as_json(self) -> dict[str, Any]:
        """The machine-readable form of `loop doctor --json`."""
        out: dict[str, Any] = {"type": "doctor", "url": self.url, "model": self.model, "provider": self.provider,
                               "ok": self.ok, "exit_code": 0 if self.ok else 1}
        if self.fatal:
            return {**out, "error": self.fatal, "hint": self.hint}
        out["checks"] = [{"check": c, "answer": a, "detail": d} for c, a, d in self.rows]
        return {**out, "verdict": self.verdict, "settings": self.settings, "hint": self.hint}


def run_doctor(flags: dict[str, Any], workspace, json_out: bool = False) -> int:
    """Probe the configured server and print the table (or JSON); 0 when loop can work with it, else 1."""
    import typer

    from loopagent.cli.config_cmd import load
    from loopagent.run.build import Host

    config = load(workspace, flags)  # a bad file or value: one line, exit 2
    host = Host.current()
    settings = config.settings
    provider = getattr(settings, "provider", "openai")
    report = examine(config, host, provider)
    if not report.fatal:  # the language servers an edit would start (loopagent/lsp/)
        report.rows += lsp_rows(settings.lsp, host.env.get("PATH", ""))
    if json_out:
        typer.echo(json.dumps(report.as_json(), ensure_ascii=False))
    elif not report.fatal:
        typer.echo("\n".join(table(report)))
    if report.fatal:
        typer.echo(f"loop: {printable(report.fatal)}" + (f"; {report.hint}" if report.hint else ""), err=True)
    elif report.hint:
        typer.echo(f"loop: hint: {report.hint}", err=True)
    return 0 if report.ok else 1


def table(report: Report) -> list[str]:
    """The report as lines: a header, one row per check, the verdict and the settings."""
    width = max(len(c) for c, _, _ in report.rows)
    lines = [f"loop doctor: {report.url} (model {report.model!r}, provider {report.provider})"]
    lines += [f"  {c:<{width}}  {a:<8} {d}".rstrip() for c, a, d in report.rows]
    lines.append(f"verdict: {report.verdict}")
    shown = "; ".join(f"{k}: {_value(v)} ({report.why[k]})" for k, v in report.settings.items())
    lines.append(f"settings: {shown}")
    return [printable(line) for line in lines]


def _value(v: Any) -> str:
    return "unset" if v is None else str(v).lower() if isinstance(v, bool) else str(v)


def examine(config, host, provider: str) -> Report:
    """Run the probes against the configured server and judge what came back."""
    from loopagent.client.http import connect
    from loopagent.messages import UserMessage
    from loopagent.output.probe import schema_row
    from loopagent.run.build import make_client
    from loopagent.secrets import Redactor, known_secrets, public_url

    settings = config.settings
    key = settings.api_key.get_secret_value() if settings.api_key else None
    report = Report(public_url(settings.base_url) or "(an invalid URL)", settings.model, provider)
    hide = Redactor(known_secrets({}, key or "", settings.base_url))
    http = connect(settings.base_url, headers={"Authorization": f"Bearer {key}"} if key else {},
                   timeout=GET_TIMEOUT, transport=host.transport)
    quick = settings.model_copy(update={"retries": 0, "connect_timeout": CONNECT_TIMEOUT,
                                        "read_timeout": min(settings.read_timeout, READ_TIMEOUT),
                                        "max_tokens": TEXT_TOKENS})
    client = make_client(quick, None, host)
    try:
        if not listed(report, http, settings, hide):
            return report
        from loopagent.client.probe import probe_context, server_kind

        probed = probe_context(http, settings.base_url, settings.model, provider, timeout=GET_TIMEOUT)
        report.kind = report.kind or server_kind(None, probed[1], provider)
        text = ask(client, [UserMessage(TEXT_PROMPT)], [], True, host.clock)
        client.max_tokens = TOOL_TOKENS
        task, tools = first_request()
        streamed = ask(client, task, tools, True, host.clock)
        plain = ask(client, task, tools, False, host.clock)
        shapes = schema_row(client, text.reply is not None)  # --output-schema: does the server enforce it
    finally:
        http.close()
        client.close()
    judge(report, config, text, streamed, plain, probed if probed[0] else recorded_window(host, provider, settings))
    report.rows.append(shapes)
    record(report, host, provider, settings, streamed, plain, probed)
    return report


def recorded_window(host, provider: str, settings) -> tuple[int | None, str]:
    """The window a server stated in an HTTP 400 of an earlier run (client/refusal.py), kept in servers.json."""
    from loopagent.client.refusal import SOURCE
    from loopagent.servers import ServerBook, server_key

    known = ServerBook(host.home).get(server_key(provider, settings.base_url, settings.model))
    return (known.ctx_size, f"{SOURCE} in an earlier run, kept in servers.json") if (
        known.ctx_size and known.ctx_source == SOURCE) else (None, "")


@functools.cache
def first_request() -> tuple[list, list]:
    """The messages and tools of a run's first request (without AGENTS.md: doctor has no workspace);
    built once, as both tool probes and the judging of their replies need it."""
    from loopagent.messages import SystemMessage, UserMessage
    from loopagent.prompt import system_prompt
    from loopagent.tools import Registry, default_tools

    tools = list(Registry(default_tools()).specs())
    return [SystemMessage(system_prompt([t.name for t in tools])), UserMessage(TOOL_PROMPT)], tools


def listed(report: Report, http, settings, hide) -> bool:
    """GET /models: a row each for reachable and models listed; False (and `fatal`) when nothing more is worth asking."""
    import httpx

    from loopagent.client.openai import _reason, _server_message
    from loopagent.client.probe import api_root
    from loopagent.run.hints import BAD_KEY, NO_KEY
    from loopagent.secrets import public_url

    path = "/api/tags" if report.provider == "ollama" else "/models"  # Ollama lists its models there
    url = under(api_root(settings.base_url) if report.provider == "ollama" else settings.base_url, path[1:])
    shown = public_url(url)
    start = time.monotonic()
    try:
        response = http.get(url)
    except httpx.TimeoutException:
        report.fatal = f"no answer from {report.url} in {GET_TIMEOUT:g} s (GET {path})"
        report.hint = "is it busy with another request or still loading the model? try again, or check its log"
        return False
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        report.fatal = hide.redact(f"cannot reach {report.url}: {_reason(exc).replace(url, shown)}")
        report.hint = UNREACHABLE
        return False
    ms = (time.monotonic() - start) * 1000
    report.rows.append(("reachable", "yes", f"GET {path}: HTTP {response.status_code} in {ms:.0f} ms"))
    if response.status_code in (401, 403):
        said = hide.redact(_server_message(response))
        report.fatal = f"HTTP {response.status_code} from {shown}: {said}"
        report.hint = BAD_KEY if settings.api_key else NO_KEY
        return False
    names = model_names(response, report.provider) if response.status_code == 200 else None
    if names:
        from loopagent.client.probe import server_kind

        report.kind = server_kind(response.json(), "", report.provider)
    if names:
        more = f" (+{len(names) - 5} more)" if len(names) > 5 else ""
        missing = "" if settings.model in names else f"; {settings.model!r} not among them (-m NAME if the server minds)"
        report.rows.append(("models listed", "yes", ", ".join(names[:5]) + more + missing))
    else:
        why = f"HTTP {response.status_code}" if response.status_code != 200 else "no model in the list"
        report.rows.append(("models listed", "no", why))
    return True


def under(base_url: str, name: str) -> str:
    """`base_url`/NAME, keeping a query (`?api-version=...`) where it belongs."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(base_url)
    except ValueError:
        return base_url.rstrip("/") + "/" + name
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + name, fragment=""))


def model_names(response, provider: str = "openai") -> list[str]:
    """The names in a model list (OpenAI's `data[].id`, Ollama's `models[].name`); anything odd is skipped."""
    key, name = ("models", "name") if provider == "ollama" else ("data", "id")
    try:
        data = response.json().get(key)
    except (ValueError, AttributeError):
        return []
    if not isinstance(data, list):
        return []
    return [str(m[name])[:80] for m in data if isinstance(m, dict) and isinstance(m.get(name), (str, int))]


def ask(client, messages: list, tools: list, stream: bool, clock: Callable[[], float]) -> Probe:
    """One short chat request through the real client; never raises on what the server does."""
    from loopagent.cancel import Cancel
    from loopagent.client.assemble import EmptyStream, OutputCut
    from loopagent.client.openai import StreamToolsRefused
    from loopagent.errors import IncompleteTurn, ModelError
    from loopagent.events import TextDelta, ThinkingDelta

    probe = Probe(start=clock())

    def emit(event) -> None:
        if probe.first is None and isinstance(event, (TextDelta, ThinkingDelta)):
            probe.first = clock()

    try:
        probe.reply = client.send(messages, tools, emit, Cancel(), stream)  # Ctrl+C ends doctor itself
    except EmptyStream:
        probe.error, probe.refused = "an empty body (HTTP 200, no events)", True
    except StreamToolsRefused as exc:
        probe.error, probe.refused = str(exc), True
    except OutputCut:
        probe.error = f"cut at the output limit of {client.max_tokens} tokens"
    except (ModelError, IncompleteTurn) as exc:
        probe.error = client.clean(str(exc))
    probe.end = clock()
    return probe


def tool_path(probe: Probe, recover: bool) -> tuple[str, str, bool]:
    """(answer, detail, works) for a request that offered the tool."""
    from loopagent.client.textcalls import recovered

    if probe.reply is None:
        return "no", probe.error, False
    if probe.reply.tool_calls:
        return "yes", ", ".join(c.name for c in probe.reply.tool_calls), True
    if recover and recovered(probe.reply, first_request()[1]) is not None:
        return "yes", "written into the text; loop takes it as a call", True
    return "no", f"answered without a tool call: {_quote(probe.reply.text)}", False


def _quote(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return json.dumps(text[:limit] + ("…" if len(text) > limit else ""), ensure_ascii=False)


def judge(report: Report, config, text: Probe, streamed: Probe, plain: Probe, ctx: tuple[int | None, str]) -> None:
    """The table's rows after the model list, the verdict, and the settings loop will use."""
    from loopagent.run.hints import BAD_KEY, NO_KEY

    settings = config.settings
    rows = report.rows
    rows.append(("streamed text", "yes", _quote(text.reply.text)) if text.reply is not None
                else ("streamed text", "no", text.error))
    s_answer, s_detail, s_ok = tool_path(streamed, settings.recover_text_calls)
    p_answer, p_detail, p_ok = tool_path(plain, settings.recover_text_calls)
    rows += [("streamed tool call", s_answer, s_detail), ("non-streamed tool call", p_answer, p_detail)]
    usage = next((p.reply.usage for p in (text, streamed, plain) if p.reply is not None and p.reply.usage), None)
    rows.append(("usage reported", "yes", f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion "
                 "tokens") if usage else ("usage reported", "no", "loop estimates token counts"))
    size, label = ctx
    rows.append(("context size", str(size), label) if size else ("context size", "unknown", "no endpoint reported it"))
    rows += speed(text)
    report.ok = text.reply is not None and (s_ok or p_ok)
    report.verdict = verdict(text, s_ok, p_ok, report.kind)
    if any(p.error.startswith(("HTTP 401 ", "HTTP 403 ")) for p in (text, streamed, plain)):
        report.hint = BAD_KEY if settings.api_key else NO_KEY
    stream_tools(report, config, streamed, s_ok, p_ok)
    context_size(report, config, ctx)


def speed(text: Probe) -> list[tuple[str, str, str]]:
    """Rows for time to first token and tokens per second (from the streamed text request)."""
    if text.reply is None or text.first is None:
        return [("time to first token", "-", "no text streamed"), ("tokens per second", "-", "")]
    rows = [("time to first token", f"{(text.first - text.start) * 1000:.0f} ms", "")]
    usage = text.reply.usage
    tokens = usage.completion_tokens if usage and usage.completion_tokens else max(1, len(text.reply.text) // 4)
    seconds = text.end - text.first
    counted = "" if usage and usage.completion_tokens else " (estimated)"
    if tokens < 2 or seconds < 0.001:
        why = "too few to measure" if tokens < 2 else "too fast to measure"
        rows.append(("tokens per second", "-", f"{tokens} tokens{counted} in {seconds * 1000:.0f} ms: {why}"))
    else:
        rows.append(("tokens per second", f"{tokens / seconds:.0f}",
                     f"{tokens} tokens{counted} in {seconds * 1000:.0f} ms"))
    return rows


def verdict(text: Probe, s_ok: bool, p_ok: bool, kind: str = "") -> str:
    """One line: can loop work with this server, and how."""
    if text.reply is None:
        return f"loop cannot work with this server: a plain streamed request failed ({text.error})"
    if s_ok:
        return "loop can work with this server: text and tool calls stream"
    if p_ok:
        return "loop can work with this server: tool calls only without streaming (loop sends those unstreamed)"
    return ("loop cannot work with this server: it answers, but no request returned a tool call (streamed or "
            f"not), so loop could not act; {TOOL_ADVICE.get(kind, GENERIC_ADVICE)}")


# How each server is made to call tools: the flag is the server's own, so advice names the one detected.
TOOL_ADVICE = {
    "llama-server": "llama-server: start it with --jinja and a model whose chat template calls tools",
    "llama-cpp-python": "llama-cpp-python: start it with --chat_format chatml-function-calling or the model's "
                        "own function-calling format (--jinja is llama-server's flag, not its)",
    "vLLM": "vLLM: start it with --enable-auto-tool-choice --tool-call-parser PARSER (hermes for Qwen and "
            "Hermes, llama3_json for Llama 3, mistral for Mistral)",
    "Ollama": "Ollama: use a model tagged tools (ollama.com/search?c=tools)",
    "LM Studio": "LM Studio: load a model it marks as able to use tools",
}
GENERIC_ADVICE = ("use a model and chat template with tool calling (llama-server: --jinja; llama-cpp-python: "
                  "--chat_format chatml-function-calling; vLLM: --enable-auto-tool-choice --tool-call-parser "
                  "PARSER; Ollama: a model tagged tools)")


def stream_tools(report: Report, config, streamed: Probe, s_ok: bool, p_ok: bool) -> None:
    """The `stream_tools` loop will use, and why."""
    configured = config.settings.stream_tools
    if configured is not None:
        value, why = configured, f"from {config.sources.get('stream_tools', 'config')}"
    elif s_ok:
        value, why = True, "streamed tool calls work"
    elif streamed.refused:
        value, why = False, ("streamed tool calls came back empty" if "empty" in streamed.error
                             else "the server refuses to stream tool calls")
    elif p_ok:
        value, why = False, "only unstreamed requests returned tool calls"
    else:
        value, why = None, "no tool call came back; learned at run time"
    report.settings["stream_tools"], report.why["stream_tools"] = value, why


def context_size(report: Report, config, ctx: tuple[int | None, str]) -> None:
    """The context size loop will use, and where it comes from."""
    configured = config.settings.ctx_size
    source = config.sources.get("ctx_size", "default")
    size, label = ctx
    if isinstance(configured, int) and source != "default":
        value, why = configured, f"from {source}"
    elif size:
        value, why = size, f"from {label}"
    else:
        value, why = DEFAULT_CTX, "the default: the server did not report one"
    report.settings["ctx_size"], report.why["ctx_size"] = value, why


def record(report: Report, host, provider: str, settings, streamed: Probe, plain: Probe,
           ctx: tuple[int | None, str]) -> None:
    """Keep what was learned in servers.json, as a run would (only what the probes settled)."""
    from loopagent.servers import ServerBook, server_key

    changes: dict[str, Any] = {}
    learned = report.settings.get("stream_tools")
    if settings.stream_tools is None and learned is not None:
        changes["stream_tools"] = learned
    if ctx[0]:
        changes["ctx_size"], changes["ctx_source"] = ctx
    if changes:
        book = ServerBook(host.home, notify=lambda text: print(f"loop: warning: {text}", file=host.err))
        book.update(server_key(provider, settings.base_url, settings.model), **changes)
