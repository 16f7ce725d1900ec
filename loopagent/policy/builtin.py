"""The built-in rules: what is denied in every mode, and what always needs approval.

Each function judges one Command (or, failing closed, raw text) and returns a Decision or None.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from .decision import Decision
from .options import GLOBAL_OPTIONS, git_configs
from .parse import Command
from .paths import braces, clean, has_braces, inside, is_harmless_device, protected, resolve, strip_glob
from .wrappers import runs_input

ROOT_PROGRAMS = frozenset({"sudo", "su", "doas", "pkexec", "run0", "runuser"})
FORMATTERS = frozenset({"mke2fs", "mkswap", "wipefs"})
DOWNLOADERS = frozenset({"curl", "wget"})
DEVICE_WRITERS = frozenset({"cp", "mv", "install", "shred", "blkdiscard", "truncate", "tee"})
COPIERS = frozenset({"cp", "mv", "install"})
# Options of the device writers whose value is the next word, not a file (shred -n 3, truncate -s 0).
VALUED_OPTIONS = frozenset({"-n", "-s", "-r", "--iterations", "--size", "--reference", "--random-source",
                            "-o", "--offset", "-l", "--length", "-p", "--step", "-m", "-g"})
# Programs made for raw devices: where their target cannot be shown not to be one, it is judged as one.
RAW_WRITERS = frozenset({"dd", "shred", "blkdiscard", "wipefs"})
# Programs whose operands are files they change; a protected path among them asks.
FILE_CHANGERS = frozenset({"cp", "mv", "install", "ln", "touch", "truncate", "rm", "rmdir", "chmod", "chown",
                           "shred", "unlink", "mkdir", "patch", "rsync", "sed", "perl", "tee", "dd"})
FORCE_FLAGS = ("--force", "--force-with-lease", "--force-if-includes", "--mirror")
# Programs the built-in rules look at; fail-closed scanning starts a command at each of them.
JUDGED = ROOT_PROGRAMS | FORMATTERS | DEVICE_WRITERS | {"rm", "dd", "git", "ln", "mknod"}
FORK_BOMB = re.compile(r"([\w:.]+)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1")
ALWAYS_DENIED = re.compile(r"(?<![\w.-])(sudo|su|doas|pkexec|run0|runuser|mkfs[\w.]*)(?![\w-])")

RULE_ROOT = "built-in: sudo/su/doas"
RULE_RM = "built-in: rm -r of /, ~, $HOME or a path outside the workspace"
RULE_RM_DYNAMIC = "built-in: rm of a path only known at run time"
RULE_MKFS = "built-in: mkfs"
RULE_DEVICE = "built-in: dd of=/dev/... and writes to devices"
RULE_FORK = "built-in: fork bomb"
RULE_PUSH = "built-in: git push --force (also spelled through git config or an alias)"
RULE_PIPE = "built-in: curl/wget piped to a shell"
RULE_PROTECTED = "built-in: writes to .git/config, .git/hooks or .loop"
RULE_FIND = "built-in: find -delete outside the workspace"


def builtin(cmd: Command, cwd: str | None, root: str, devices: bool = False) -> Decision | None:
    """The built-in rules for one command: a deny, an ask, or None.

    `devices`: the host's disks are reachable (no sandbox, whose /dev holds none), so a raw
    writer's target only known at run time, or relative to an unknown directory, is judged a disk.
    """
    prog, args = cmd.program, cmd.words[1:]
    if prog in ROOT_PROGRAMS:
        return Decision("deny", f"{prog} runs commands as another user; loop never does", RULE_ROOT)
    if prog.startswith("mkfs") or prog in FORMATTERS:
        return Decision("deny", f"{prog} destroys a filesystem", RULE_MKFS)
    if prog and prog in cmd.functions:
        return Decision("deny", f"function {prog} calls itself (fork bomb)", RULE_FORK)
    if DOWNLOADERS & set(cmd.fed_by) and runs_input(cmd.words):
        return Decision("deny", f"{prog} would run code downloaded by {'/'.join(DOWNLOADERS & set(cmd.fed_by))}",
                        RULE_PIPE)
    if prog == "git":
        found = git_verdict(cmd)
        if found:
            return found
    device = device_write(cmd, None if cmd.chdir else cwd, devices)
    if device:
        return Decision("deny", device, RULE_DEVICE)
    if prog in ("mknod", "ln"):
        found = device_node(cmd, None if cmd.chdir else cwd, devices)
        if found:
            return found
    if prog == "rm":
        return rm_verdict(cmd, None if cmd.chdir else cwd, root)
    if prog == "find" and "-delete" in args:
        return find_delete(args, None if cmd.chdir else cwd, root)
    if has_braces(cmd.words[0]):  # `{rm,-rf,..}`: judge what the expansion runs
        expanded = tuple(w for word in cmd.words for w in braces(word))
        if expanded != cmd.words:
            return builtin(Command(expanded, functions=cmd.functions), cwd, root, devices)
    return None


def git_verdict(cmd: Command) -> Decision | None:
    """Force pushes however they are spelled; `git config` writes."""
    for key, value in git_configs(cmd.words, cmd.assigns):
        why = forcing_config(key, value)
        if why:
            return Decision("deny", why, RULE_PUSH)
    args = list(cmd.canon[1:]) if cmd.canon else list(cmd.words[1:])
    if args[:1] == ["push"] and force_push(args[1:]):
        return Decision("deny", "force-pushing rewrites the remote's history", RULE_PUSH)
    if args[:1] == ["config"] and not config_read_only(args[1:]):
        return Decision("ask", "git config changes what later git commands run", RULE_PROTECTED)
    return None


def forcing_config(key: str, value: str) -> str:
    """Why a git config entry given on the command line can force-push, or ""."""
    if key.startswith("alias."):
        return f"a git alias ({key}) can run anything, a force push included"
    if re.fullmatch(r"remote\..*\.push", key) and "+" in value:
        return f"{key}={value} is a forcing refspec"
    if re.fullmatch(r"remote\..*\.mirror", key) or (key.startswith(("push.", "remote.")) and "force" in value.lower()):
        return f"{key} makes a push force or mirror"
    return ""


def force_push(args: Sequence[str]) -> bool:
    for a in args:
        if a.startswith(FORCE_FLAGS) or a.startswith("+"):
            return True
        if a.startswith("-") and not a.startswith("--") and "f" in a:
            return True  # -f, -uf, -fu
        if ":" in a and a.split(":", 1)[0].startswith("+"):
            return True
    return False


def config_read_only(args: Sequence[str]) -> bool:
    """Does this `git config` only read?"""
    reads = ("--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "--show-origin",
             "--show-scope", "--name-only", "--get-color", "--get-colorbool", "get", "list")
    if any(a in reads or a.startswith(("--get", "--list")) for a in args):
        return True
    operands = [a for a in args if not a.startswith("-")]
    return len(operands) == 1  # `git config user.name` prints it


def device_write(cmd: Command, cwd: str | None, devices: bool) -> str | None:
    """Why this command writes to a device, or None; with `devices`, also when it may write to one."""
    targets = [(t, False) for t in cmd.writes]
    if cmd.program in DEVICE_WRITERS | RAW_WRITERS:
        targets += [(a, cmd.program in RAW_WRITERS and i in cmd.unknown) for i, a in written(cmd)]
    for t, unknown in targets:
        path = None if unknown else resolve(t, cwd)
        if path is None and devices and (unknown or cmd.program in RAW_WRITERS):
            return (f"{cmd.program} writes to {t}, which may be a disk: its path is only known at run time "
                    "and no sandbox hides the disks")
        if path is not None and path.startswith("/dev/") and not is_harmless_device(path):
            return f"writes to the device {path}"
    return None


def written(cmd: Command) -> list[tuple[int, str]]:
    """(index, path) of the operands a device writer writes: dd's of=, a copy's destination, the rest's files."""
    words = list(enumerate(cmd.words[1:], start=1))
    operands = [(i, a) for i, a in words if not a.startswith("-") and cmd.words[i - 1] not in VALUED_OPTIONS]
    if cmd.program == "dd":
        return [(i, a[3:]) for i, a in words if a.startswith("of=")]
    if cmd.program in COPIERS and not any(a.startswith(("-t", "--target")) for _, a in words):
        # the sources are only read, but a literal /dev/ path stays denied as before
        return [(i, a) for n, (i, a) in enumerate(operands) if n == len(operands) - 1 or a.startswith("/dev/")]
    return operands


def device_node(cmd: Command, cwd: str | None, devices: bool) -> Decision | None:
    """`mknod NAME b ...` and `ln -s /dev/sda NAME` make a name in the workspace through which a disk is
    written later (by a `dd of=NAME` that looks harmless): judged like writing the device."""
    args = [a for a in cmd.words[1:] if not a.startswith("-")]
    if cmd.program == "mknod" and devices and any(a in ("b", "c", "u") for a in args[1:2]):
        return Decision("deny", "mknod makes a device node, through which a disk can be written", RULE_DEVICE)
    if cmd.program != "ln" or not args:
        return None
    symbolic = any(a == "--symbolic" or (a.startswith("-") and not a.startswith("--") and "s" in a)
                   for a in cmd.words[1:])
    home = posixpath.dirname(args[-1]) if symbolic and len(args) > 1 else ""
    for target in args[:-1] if len(args) > 1 else args:
        unknown = cmd.words.index(target) in cmd.unknown
        path = None if unknown else resolve(posixpath.join(home, target) if home else target, cwd)
        if path is not None and path.startswith("/dev/") and not is_harmless_device(path):
            return Decision("deny", f"ln makes a link to the device {path}, through which it can be written",
                            RULE_DEVICE)
        if path is None and devices:
            return Decision("ask", f"ln links to {target}, only known at run time: it may be a disk, and no "
                                   "sandbox hides the disks", RULE_DEVICE)
    return None


def rm_verdict(cmd: Command, cwd: str | None, root: str) -> Decision | None:
    recursive, targets, options = False, [], True
    for i, a in enumerate(cmd.words[1:], start=1):
        if options and a == "--":
            options = False
        elif options and a == "--no-preserve-root":
            return Decision("deny", "rm --no-preserve-root can delete /", RULE_RM)
        elif options and a.startswith("--") and i not in cmd.unknown:
            recursive |= a == "--recursive"
        elif options and a.startswith("-") and len(a) > 1 and i not in cmd.unknown:
            recursive |= "r" in a or "R" in a
        else:
            targets.append((a, i in cmd.unknown))
    ask = None
    for target, unknown in targets:
        for t in braces(target):
            danger = rm_danger(t, cwd, root) if recursive else None
            if danger and danger != "unknown":
                return Decision("deny", f"rm -r of {t}: {danger}", RULE_RM)
            if unknown and not danger:
                ask = ask or Decision("ask", f"rm of {t!r}: which path that is is only known at run time",
                                      RULE_RM_DYNAMIC)
            elif danger == "unknown":
                ask = ask or Decision("ask", f"cannot tell which directory rm -r {t} removes after cd", RULE_RM)
    if cmd.appended:
        ask = ask or Decision("ask", "rm gets its paths at run time (xargs)", RULE_RM_DYNAMIC)
    return ask


def rm_danger(target: str, cwd: str | None, root: str) -> str | None:
    """Why removing `target` recursively is never wanted, 'unknown', or None."""
    base_path = strip_glob(target)
    if base_path.startswith("~") or re.match(r"\$(HOME\b|\{HOME\})", base_path):
        head, _, rest = base_path.partition("/")
        if head.startswith("~") and head != "~":
            return "another user's home directory"
        home = posixpath.normpath("/HOME/" + strip_glob(rest))
        return "your home directory" if not home.startswith("/HOME/") else None
    if base_path.startswith("$"):
        rest = re.sub(r"^\$(\{[^}]*\}|\w+)", "", target)
        return "an empty variable would make this /" if rest.startswith("/") and strip_glob(rest) == "/" else None
    if not base_path.startswith("/") and cwd is None:
        return "unknown"
    path = clean(base_path) if base_path.startswith("/") else posixpath.normpath(posixpath.join(cwd, base_path))
    if path == "/" or path.count("/") == 1:
        return "/ or a top-level system directory"
    if inside(root, path):
        return "the workspace or a directory containing it"
    if ".." in base_path.split("/") and not inside(path, root):
        return "it leaves the workspace through .."
    return None


def find_delete(args: Sequence[str], cwd: str | None, root: str) -> Decision | None:
    """`find .. -delete` removes outside the workspace: ask (find's starting points come first)."""
    for a in args:
        if a.startswith(("-", "(", "!")):
            break
        where = resolve(a, cwd)
        if where is None or not inside(where, root):
            return Decision("ask", f"find -delete starts at {a}, outside the workspace", RULE_FIND)
    return None


def protected_write(cmd: Command, cwd: str | None, root: str) -> Decision | None:
    """Writes into .git/config, .git/hooks or .loop change what later runs: ask in every mode."""
    targets = list(cmd.writes)
    if cmd.program in FILE_CHANGERS:
        targets += [a for a in cmd.words[1:] if not a.startswith("-")]
        targets += [a.partition("=")[2] for a in cmd.words[1:] if a.startswith(("of=", "--target-directory="))]
    for t in targets:
        where = resolve(t, None if cmd.chdir else cwd)
        place = protected(where, root) if where else None
        if place is None and where is None and re.search(r"(^|/)(\.git/(config|hooks)|\.loop)(/|$)", t):
            place = t
        if place:
            return Decision("ask", f"{cmd.program or 'this command'} writes to {t} ({place}), which changes "
                                   "what later commands run", RULE_PROTECTED)
    return None


def fail_closed(raw: str, deny_rules, root: str, devices: bool = False) -> Decision | None:
    """For text that could not be checked exactly: deny when it names a denied program anywhere."""
    text = re.sub(r"[\\'\"]", "", raw)  # r''m -> rm
    hit = ALWAYS_DENIED.search(text)
    if hit:
        return Decision("deny", f"this command cannot be checked exactly and mentions {hit.group(1)}",
                        f"{RULE_MKFS if hit.group(1).startswith('mkfs') else RULE_ROOT} (fail closed)")
    if FORK_BOMB.search(text):
        return Decision("deny", "this looks like a fork bomb", RULE_FORK)
    flat = " ".join(text.split())
    # with no cd in sight, relative paths are the workspace's: `~$(rm -rf ..)` is the parent
    cwd = None if re.search(r"(?<![\w.-])(cd|pushd|popd)(?![\w-])", text) else root
    for rule in deny_rules:
        name = re.split(r"[*?\[]", rule.pattern, maxsplit=1)[0].strip()
        if name and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", flat):
            return Decision("deny", f"this command cannot be checked exactly and mentions {name}",
                            f"{rule.describe()} (fail closed)")
        head = name.split(" ", 1)[0]
        if head in GLOBAL_OPTIONS and " " in name and re.search(  # `git -C x push` for a `git push` rule
                rf"(?<![\w.-]){re.escape(head)}\s(.*\s)?{re.escape(name.split(' ', 1)[1])}(?![\w-])", flat):
            return Decision("deny", f"this command cannot be checked exactly and mentions {name}",
                            f"{rule.describe()} (fail closed)")
    for segment in re.split(r"[;&|()\n`{}]|\$\(", text):
        words = segment.split()
        # any word may be where a command starts (`echo "rm -rf /" | bash`): try each one
        for i, word in enumerate(words):
            if posixpath.basename(word) in JUDGED or word.startswith("mkfs"):
                found = builtin(Command(tuple(words[i:])), cwd, root, devices)
                if found and found.verdict == "deny":
                    return Decision("deny", found.reason, f"{found.rule} (fail closed)")
    if re.search(r"\{[^{}\s]*,", text):  # `{rm,-rf,/}` hidden where it cannot be parsed
        for word in text.split():
            expanded = [w for part in braces(word) for w in part.split(",")]
            found = builtin(Command(tuple(expanded)), cwd, root, devices) if expanded else None
            if found and found.verdict == "deny":
                return Decision("deny", found.reason, f"{found.rule} (fail closed)")
    return None

