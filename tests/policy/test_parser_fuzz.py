"""The parser fails closed: no input crashes it, and no composition of the dangerous forms is allowed."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopagent.policy import Policy, Rule
from loopagent.policy.parse import parse
from loopagent.policy.unparseable import Unparseable

ALLOW_RULES = [Rule("allow", p) for p in ("cat *", "git status*", "echo *")]
PIECES = ["a", "rm", " ", "-rf", "..", "$(", ")", "`", "<(", ">(", "{", "}", ",", "'", '"', "\\", "~", "#", ";",
          "&", "|", "\n", "<<EOF\n", "\nEOF\n", "<<'E'\n", "<<<", ">&-", "2>&1-", "{fd}>", "${", "$'\\x72m'", "=",
          "*", "[[", "((", "f()", "bash -c ", "eval ", "sudo ", "exec ", "xargs ", "env A=1 ", "find . -exec ",
          " {} +", "BASH_ENV=x ", "git -c alias.x=", "python3 -c ", "case ", "esac"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=60), st.lists(st.sampled_from(PIECES), max_size=25).map("".join)))
def test_no_input_crashes_the_parser_or_the_policy(line):
    try:
        parse(line)
    except Unparseable:
        pass
    for mode in ("edits", "all"):
        decision = Policy(mode, ALLOW_RULES, "/srv/p").check(line)
        assert decision.verdict in ("allow", "ask", "deny") and decision.rule


def test_descriptor_forms_are_understood():
    assert parse("exec >&- 2>&-")[0].writes == ()
    assert parse("cmd 2>&-")[0].words == ("cmd",)
    assert parse("ls 2>&1-")[0].writes == ()
    [cmd] = parse("exec {fd}>out.txt")
    assert cmd.writes == ("out.txt",) and "{fd}" not in cmd.words


# Payloads that must never run unasked in mode edits, and denied ones for mode all.
UNASKED = ["touch pwned.txt", "rm -rf ..", "python3 -c 'import os'", "curl x", "git push origin main"]
DENIED = ["sudo id", "rm -rf ..", "mkfs.ext4 /dev/sda1", "git push --force origin main", "su''do id",
          '"sudo" id', "\\sudo id", "r''m -rf ..", "$'\\x73udo' id", "git push -f"]
ASSIGNMENTS = ["BASH_ENV=evil.sh", "LD_PRELOAD=x.so", "GIT_CONFIG_PARAMETERS=x", "PATH=.:/usr/bin", "IFS=x",
               "PROMPT_COMMAND=x", "PYTHONSTARTUP=x"]


def wrappings(cmd: str, depth: int) -> list[str]:
    """Ways to run `cmd` for real: substitutions, shells, wrappers, here-documents, chains."""
    q = shlex.quote(cmd)
    out = [f"cat x ~$({cmd})", f"echo $({cmd})", f'cat "$({cmd})"', f"cat <({cmd})", f"echo ${{x:-$({cmd})}}",
           f"bash -c {q}", f"sh -c {q}", f"eval {q}", f"cat x && {cmd}", f"echo ok; {cmd}", f"cat x | {cmd}",
           f"bash <<'EOF{depth}'\n{cmd}\nEOF{depth}", f"bash <<EOF{depth}\n{cmd}\nEOF{depth}",
           f"bash <<< {q}", f"f() {{ {cmd}; }}; f", f"find . -maxdepth 0 -exec bash -c {q} \\;",
           f"timeout 5 bash -c {q}", f"env A=1 bash -c {q}", f"nohup bash -c {q}", f"command eval {q}",
           f"( {cmd} )", f"{{ {cmd}; }}", f"if true; then {cmd}; fi", f"for i in 1; do {cmd}; done"]
    out += [f"{a} bash -c {q}" for a in ASSIGNMENTS] + [f"{a} {cmd}" for a in ASSIGNMENTS]
    if "`" not in cmd:
        out.append(f"cat x ~`{cmd}`")
    return out


@st.composite
def composed(draw, payloads: list[str]) -> str:
    cmd = draw(st.sampled_from(payloads))
    for depth in range(draw(st.integers(1, 3))):
        cmd = draw(st.sampled_from(wrappings(cmd, depth)))
    return cmd


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(composed(UNASKED))
def test_no_composition_of_dangerous_forms_is_allowed_in_edits(line):
    decision = Policy("edits", ALLOW_RULES, "/srv/p").check(line)
    assert decision.verdict != "allow", (line, decision)


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(composed(DENIED))
def test_a_denied_program_is_never_allowed_even_sandboxed_in_mode_all(line):
    decision = Policy("all", ALLOW_RULES + [Rule("allow", "*")], "/srv/p", sandbox="sandboxed").check(line)
    assert decision.verdict != "allow", (line, decision)


def test_bashlex_endless_loop_on_an_unclosed_brace_parameter_is_closed():
    """bashlex scans a `${` with no `}` in its word forever; the loaded parser raises instead."""
    from bashlex import errors, subst

    from loopagent.policy.parse import load_bashlex

    load_bashlex()
    with pytest.raises(errors.ParsingError):
        subst._paramexpand(None, "${abc", 0)
    node, end = subst._paramexpand(None, "${abc}", 0)
    assert (node.value, end) == ("abc", 6)
