"""Secrets: what one is, and how loop keeps the ones it holds out of reach of what it runs.

A secret is a variable whose name says so (KEY, TOKEN, SECRET, PASS, ...PWD, CREDENTIAL,
AUTH, DSN, WEBHOOK, COOKIE) or whose value carries `user:password@` credentials. Commands
get an environment without them (`scrubbed_env`), tool results have their known values
replaced by `[redacted]` (`Redactor`), and URLs are shown without userinfo or query
(`public_url`).

Loop's own process is the harder part. On Linux `/proc/<pid>/environ` and
`/proc/<pid>/cmdline` show the memory of the original exec: deleting a variable from
os.environ does not change them, and a command run unsandboxed as the same user (or as
root, where PR_SET_DUMPABLE is no wall) can read both. So `conceal()`, the first thing the
entry point does, re-executes the interpreter when the environment holds a secret-looking
variable or the command line holds `--api-key` (or a `--base-url` with credentials): the
new process starts with an environment and an argv without them. The removed values travel
through a pipe inherited across the exec (named by the one non-secret variable
LOOP_SECRETS_FD=FD:PID), read and closed before anything else runs; they then live only in
this module's memory, and `environment()` puts them back into the mapping that settings are
read from. Reading the key from a file or stdin instead was rejected: it changes how every
user passes a key, and stdin is the REPL's. When nothing is secret there is no re-exec, so
the usual start-up cost is a few string checks; a re-exec costs one more interpreter start
(~25 ms). Where exec is not possible (not Linux, exec fails, too much to pass) the variables
are only deleted from os.environ, silently. What this does not cover: a same-user process
that can ptrace loop or read `/proc/<pid>/mem` (root can); the sandbox's PID namespace is
the wall for that.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections import ChainMap
from collections.abc import Iterable, Mapping
from urllib.parse import quote, unquote, urlsplit, urlunsplit

REDACTED = "[redacted]"
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASS", "CREDENTIAL", "AUTH", "DSN", "WEBHOOK", "COOKIE")
NOT_SECRET = frozenset({"PWD", "OLDPWD"})  # the shell's working directories end in PWD too
MIN_SECRET_CHARS = 6  # shorter values ("1", "true", "basic") would redact ordinary words
# Options whose values the re-exec takes out of argv; environment() holds them under these names.
HIDDEN_OPTIONS = {"--api-key": "api_key", "--base-url": "base_url"}
FD_VAR = "LOOP_SECRETS_FD"
# scheme://user:password@ anywhere in a value (several URLs may share one variable).
CREDENTIALED_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s:]*:([^/?#@\s]+)@")

_hidden: dict[str, str] = {}  # the secrets taken out of this process's environment, in memory only
_concealed = False


def is_secret(name: str, value: str = "") -> bool:
    """Whether a variable (or a query parameter) holds a secret, judged by its name or its value."""
    upper = name.upper()
    if upper.startswith("--"):
        return True  # an option taken out of argv (HIDDEN_OPTIONS), never a real variable
    if upper in NOT_SECRET:
        return False
    if any(word in upper for word in SECRET_WORDS) or upper.endswith("PWD") or "PWD_" in upper:
        return True
    return "@" in value and CREDENTIALED_URL.search(value) is not None


def scrubbed_env(environ: Mapping[str, str], allow: list[str] | tuple[str, ...] = (),
                 secrets: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment a shell command sees: no secret-looking names (unless allowed), no known secret values."""
    kept = {}
    for name, value in environ.items():
        if any(s and s in value for s in secrets):
            continue  # the API key itself never reaches a command, allowlisted or not
        if name not in allow and is_secret(name, value):
            continue
        kept[name] = value
    return kept


def public_url(url: str) -> str:
    """The base URL without user:password and without a query string (keys hide in both)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"  # IPv6
    if port:
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def url_secrets(url: str) -> list[str]:
    """The secret parts of a URL: its password and the values of secret-looking query parameters."""
    try:
        parts = urlsplit(url)
        found = [parts.password] if parts.password else []
    except ValueError:
        return []
    for pair in parts.query.split("&"):
        name, _, value = pair.partition("=")
        if value and (is_secret(unquote(name)) or name.lower() in ("sig", "signature")):
            found.append(value)
    return [unquote(s) for s in found] + [s for s in found if unquote(s) != s]


def known_secrets(environ: Mapping[str, str], api_key: str = "", base_url: str = "") -> list[str]:
    """Every secret value loop knows of: the API key, secret variables' values, credentials in URLs."""
    found = [api_key] if api_key else []
    found += url_secrets(base_url)
    for name, value in environ.items():
        if is_secret(name, value):
            found.append(value)
            found += [m.group(1) for m in CREDENTIALED_URL.finditer(value)]
            found += [unquote(m.group(1)) for m in CREDENTIALED_URL.finditer(value)]
    return [s for s in found if len(s) >= MIN_SECRET_CHARS]


class Redactor:
    """Replaces known secret values (and their percent-encoded and base64 forms) with [redacted]."""

    def __init__(self, values: Iterable[str]):
        forms = set()
        for value in values:
            if len(value) >= MIN_SECRET_CHARS:
                forms |= encodings(value)
        # One alternation, longest first, so a value that contains another is replaced whole.
        ordered = sorted(forms, key=len, reverse=True)
        self.pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def redact(self, text: str) -> str:
        """`text` with every known secret replaced by [redacted]."""
        if self.pattern is None or not text:
            return text
        return self.pattern.sub(REDACTED, text)


def encodings(value: str) -> set[str]:
    """The forms a secret is likely to be printed in: as is, percent-encoded, base64."""
    import base64

    raw = value.encode("utf-8", "surrogateescape")
    b64 = base64.b64encode(raw).decode()
    url64 = base64.urlsafe_b64encode(raw).decode()
    return {value, quote(value, safe=""), quote(value), b64, b64.rstrip("="), url64, url64.rstrip("=")}


def environment() -> Mapping[str, str]:
    """The environment loop was started with: os.environ plus the secrets taken out of it."""
    return ChainMap(_hidden, os.environ) if _hidden else os.environ


def conceal(argv: list[str] | None = None) -> None:
    """Take secrets out of this process's environment and command line, re-executing it if need be.

    Call it first, before anything heavy is imported. Returns (in the same or a new process)
    with the secrets available only through environment().
    """
    global _concealed
    if _concealed:
        return
    _concealed = True
    if receive():
        return  # the re-executed process: it was started clean
    args, options = without_secret_options(list(sys.argv[1:] if argv is None else argv))
    hidden = {name: value for name, value in os.environ.items() if is_secret(name, value)}
    if not hidden and not options:
        return
    if sys.platform.startswith("linux") and sys.executable:
        reexec(args, {**hidden, **options})  # returns only when the exec failed
    # Without a re-exec the options stay in argv for the parser: they cannot leave /proc anyway.
    _hidden.update(hidden)
    for name in hidden:
        os.environ.pop(name, None)


def without_secret_options(args: list[str]) -> tuple[list[str], dict[str, str]]:
    """`args` without `--api-key KEY` and a credentialed `--base-url URL` (either `--opt=VALUE`), and those values.

    Only options before a `--` count; the last one given wins, as for the parser.
    """
    kept: list[str] = []
    found: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            kept += args[i:]
            break
        name, eq, value = arg.partition("=")
        if name not in HIDDEN_OPTIONS or (not eq and i + 1 == len(args)):
            kept.append(arg)
            i += 1
            continue
        step = 1 if eq else 2
        value = value if eq else args[i + 1]
        if name == "--api-key" or url_secrets(value):
            found[name] = value
        else:
            kept += args[i:i + step]
        i += step
    return kept, found


def reexec(args: list[str], hidden: dict[str, str]) -> None:
    """Replace this process with `python -m loopagent ARGS`, its secrets passed through a pipe."""
    data = b"\0".join(os.fsencode(name) + b"=" + os.fsencode(value) for name, value in hidden.items())
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return
    try:
        os.set_blocking(write_end, False)  # a pipe too small for the data must not hang the start
        view = memoryview(data)
        while view:
            view = view[os.write(write_end, view):]
        os.close(write_end)
        write_end = -1
        os.set_inheritable(read_end, True)
        env = {name: value for name, value in os.environ.items() if name not in hidden}
        env[FD_VAR] = f"{read_end}:{os.getpid()}"
        os.execve(sys.executable, [sys.executable, *interpreter_options(), "-m", "loopagent", *args], env)
    except OSError:
        pass
    if write_end >= 0:
        os.close(write_end)
    os.close(read_end)


def interpreter_options() -> list[str]:
    """The interpreter's own options of this run (-X, -W, -I ...), and -P unless only the current directory
    holds this loopagent (`python -m loopagent` in a checkout that is not installed).

    -P keeps `python -m` from importing a `loopagent/` or a `bashlex.py` that sits in the current
    directory (the workspace, maybe the model's): the console script never looked there, so the
    re-executed process must not either.
    """
    orig = list(getattr(sys, "orig_argv", []))
    opts = orig[1 : len(orig) - len(sys.argv)]
    if opts[-1:] == ["-m"]:
        opts.pop()
    for i, opt in enumerate(opts):
        if not opt.startswith("-") and (i == 0 or opts[i - 1] not in ("-X", "-W")):
            opts = []  # not the shape expected of `python [options] -m loopagent`: pass none
            break
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    first = os.path.abspath(sys.path[0]) if sys.path and sys.path[0] else os.getcwd()
    if not sys.flags.safe_path and (first != package_parent or _installed_here(package_parent)):
        opts.append("-P")
    return opts


def _installed_here(package_parent: str) -> bool:
    """Whether `import loopagent` finds this same package without the current directory on sys.path
    (an editable install run from its checkout): then -P costs nothing and keeps the directory's other
    modules out."""
    from importlib.machinery import PathFinder

    mine = os.path.realpath(os.path.join(package_parent, "loopagent"))
    finders = [lambda: PathFinder.find_spec("loopagent", sys.path[1:])]
    finders += [lambda f=f: f.find_spec("loopagent", None) for f in sys.meta_path
                if f is not PathFinder and hasattr(f, "find_spec")]
    for find in finders:
        try:
            spec = find()
        except Exception:  # a third-party finder's fault is not ours to report: no -P, as before
            continue
        if spec is not None:
            return any(os.path.realpath(p) == mine for p in spec.submodule_search_locations or ())
    return False


def receive() -> bool:
    """In a re-executed process: read the secrets from the inherited pipe into memory, close it."""
    spec = os.environ.pop(FD_VAR, "")
    fd_text, _, pid = spec.partition(":")
    if not fd_text.isdigit() or pid != str(os.getpid()):
        return False  # absent, or inherited from some other loop: not ours to read
    fd = int(fd_text)
    chunks = []
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        return False
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
    for item in b"".join(chunks).split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep:
            _hidden[os.fsdecode(name)] = os.fsdecode(value)
    return True
