"""Programs' global options: `git -C DIR -c k=v push` is `git push` for the rules, and the options
that bring in code the rules cannot see (`git -c core.pager=…`, `make SHELL=…`, `cargo --config`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .wrappers import base


@dataclass(frozen=True)
class Options:
    """A program's global options: those taking a value, and where they may appear."""

    values: frozenset[str]
    anywhere: bool = False  # make: options and VAR=x mix with targets
    code: frozenset[str] = frozenset()  # options that bring in code the rules cannot see
    subcommand_first: bool = False  # `cargo +nightly build`


GLOBAL_OPTIONS: dict[str, Options] = {
    "git": Options(frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path",
                              "--config-env", "--super-prefix", "--attr-source", "--list-cmds"}),
                   code=frozenset({"--exec-path", "--config-env"})),
    "make": Options(frozenset({"-C", "--directory", "-f", "--file", "--makefile", "-I", "--include-dir",
                               "-o", "--old-file", "--assume-old", "-W", "--what-if", "--new-file",
                               "--assume-new", "-E", "--eval", "-l", "--load-average", "-j", "--jobs"}),
                    anywhere=True, code=frozenset({"-E", "--eval"})),
    "npm": Options(frozenset({"--prefix", "-C", "--userconfig", "--globalconfig", "--registry", "--loglevel",
                              "-w", "--workspace", "--cache", "--script-shell"}),
                   code=frozenset({"--userconfig", "--globalconfig", "--script-shell"})),
    "pnpm": Options(frozenset({"-C", "--dir", "--filter", "-F", "-w", "--workspace-root", "--loglevel"})),
    "yarn": Options(frozenset({"--cwd", "--cache-folder", "--modules-folder", "--registry"})),
    "cargo": Options(frozenset({"-C", "--config", "-Z", "--color"}), code=frozenset({"--config"})),
    "docker": Options(frozenset({"--context", "-c", "-H", "--host", "--config", "-l", "--log-level",
                                 "--tlscacert", "--tlscert", "--tlskey"}), code=frozenset({"--config"})),
    "kubectl": Options(frozenset({"-n", "--namespace", "--context", "--kubeconfig", "--cluster", "--user",
                                  "-s", "--server", "--token", "-v", "--as", "--as-group", "--as-uid",
                                  "--request-timeout", "--cache-dir"})),
    "helm": Options(frozenset({"-n", "--namespace", "--kube-context", "--kubeconfig", "--registry-config"})),
    "terraform": Options(frozenset()),
    "tofu": Options(frozenset()),
    "uv": Options(frozenset({"--directory", "--project", "--cache-dir", "--config-file"}),
                  code=frozenset({"--config-file"})),
    "poetry": Options(frozenset({"-C", "--directory", "-P", "--project"})),
}
# `git -c KEY=...` keys that change nothing but output and identity; every other key may run code.
SAFE_GIT_CONFIG = re.compile(r"(color\..*|user\.(name|email)|core\.quotepath|advice\..*|init\.defaultbranch"
                             r"|commit\.gpgsign|tag\.gpgsign|log\..*|status\..*|column\..*|core\.autocrlf"
                             r"|diff\.(renames|noprefix|mnemonicprefix|relative|algorithm|context)"
                             r"|merge\.(conflictstyle|ff|log)|pull\.(rebase|ff)|rebase\.autosquash"
                             r"|i18n\..*|protocol\.version|maintenance\.auto|gc\.auto|fetch\.prune)", re.I)



def canonical(words: Sequence[str]) -> tuple[tuple[str, ...], list[str], str]:
    """A command with its program's global options removed (what rules match), the options
    removed that change what runs (so allow rules match only the literal text), and why
    one of them brings in code ("")."""
    prog = base(words[0]) if words else ""
    spec = GLOBAL_OPTIONS.get(prog)
    if spec is None:
        return tuple(words), [], ""
    out, widening, code, i = [prog], [], "", 1
    args = list(words[1:])
    if prog in ("cargo", "rustup") and args and args[0].startswith("+"):
        i += 1  # cargo +nightly: a toolchain, not a subcommand
    rest_is_operands = False
    while i < len(words):
        w = words[i]
        if rest_is_operands or not (w.startswith("-") or (spec.anywhere and "=" in w) or tf_chdir(prog, w)):
            if not spec.anywhere:
                out += words[i:]
                break
            out.append(w)
            i += 1
            continue
        if w == "--":
            rest_is_operands = True
            out.append(w)
            i += 1
            continue
        name, _, _ = w.partition("=")
        takes = name in spec.values and "=" not in w
        value = words[i + 1] if takes and i + 1 < len(words) else (w.partition("=")[2] if "=" in w else "")
        if prog == "make" and name in ("-j", "-l") and not (value and value.replace(".", "").isdigit()):
            takes = False  # `make -j` alone: no value follows
        reason = option_code(prog, spec, name, value, w)
        if reason:
            code = code or reason
            widening.append(w)
        elif prog == "make" and "=" in w and not w.startswith("-"):
            widening.append(w)  # a variable the recipes may run
        i += 2 if takes else 1
    return tuple(out), widening, code


def tf_chdir(prog: str, word: str) -> bool:
    return prog in ("terraform", "tofu") and word.startswith("-chdir=")


def option_code(prog: str, spec: Options, name: str, value: str, word: str) -> str:
    """Why one global option brings in code the rules cannot see, or ""."""
    if name in spec.code:
        return f"{prog} {name} brings in code or configuration from elsewhere"
    if prog == "git" and name == "-c":
        key = value.partition("=")[0]
        if not SAFE_GIT_CONFIG.fullmatch(key):
            return f"git -c {key} may run a program"
    if prog == "make" and "=" in word and re.match(r"(MAKE)?SHELL|\.SHELLFLAGS|MAKEFLAGS", word):
        return f"make {word.partition('=')[0]}= changes the shell that runs recipes"
    return ""


def git_configs(words: Sequence[str], assigns: Sequence[str]) -> list[tuple[str, str]]:
    """Every config entry a git command is given on its command line or in GIT_CONFIG_* variables."""
    found = []
    i = 1
    while i < len(words) and words[i].startswith("-"):
        w = words[i]
        if w in ("-c", "--config-env") and i + 1 < len(words):
            key, _, value = words[i + 1].partition("=")
            found.append((key.lower(), value))
            i += 2
            continue
        if w.startswith("--config-env="):
            key, _, value = w.partition("=")[2].partition("=")
            found.append((key.lower(), value))
        i += 2 if w in GLOBAL_OPTIONS["git"].values else 1
    env = dict(a.partition("=")[::2] for a in assigns)
    params = env.get("GIT_CONFIG_PARAMETERS", "")
    for m in re.finditer(r"'?([A-Za-z0-9_.*-]+)'?\s*=\s*'?([^']*)'?", params):
        found.append((m.group(1).lower(), m.group(2)))
    for name, value in env.items():
        m = re.fullmatch(r"GIT_CONFIG_KEY_(\d+)", name)
        if m:
            found.append((value.lower(), env.get(f"GIT_CONFIG_VALUE_{m.group(1)}", "")))
    return found
