"""The command-line parser under the policy, and properties of the policy over generated command chains."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from loopagent.policy import Policy, Rule
from loopagent.policy.parse import parse
from loopagent.policy.unparseable import MAX_DEPTH


def test_quoting_is_resolved_before_matching():
    assert parse("$'\\x72\\x6d' -rf x")[0].words == ("rm", "-rf", "x")
    assert parse("r''m \"-rf\" x")[0].words == ("rm", "-rf", "x")
    assert parse("timeout -s KILL 5 env -i A=1 nohup pytest -q")[0].words == ("pytest", "-q")


def test_redirections_and_tee_are_writes():
    cmds = parse("{ ls; pwd; } > out.txt; ls | tee -a log.txt /tmp/copy; exec 2>err.txt")
    writes = [c.writes for c in cmds]
    assert writes == [("out.txt",), ("out.txt",), (), ("log.txt", "/tmp/copy"), ("err.txt",)]


def test_quoted_heredoc_body_is_data_and_unquoted_body_is_code():
    literal = parse("cat > a.sh <<'EOF'\necho $(whoami)\nEOF")
    assert [c.opaque for c in literal] == [False]
    assert parse("cat > a.sh <<EOF\necho $(whoami)\nEOF")[0].opaque


def test_nesting_deeper_than_the_limit_is_never_allowed():
    def nest(command: str, depth: int) -> str:
        for _ in range(depth):
            command = "bash -c " + "'" + command.replace("'", "'\\''") + "'"
        return command

    policy = Policy("all", (), "/srv/p")
    assert policy.check(nest("sudo id", 3)).verdict == "deny"
    assert policy.check(nest("ls", 3)).verdict == "allow"
    deep = "eval " * (MAX_DEPTH + 3)  # quoting would grow 4x a level; eval nests without quotes
    assert policy.check(deep + "ls").verdict == "ask"
    assert policy.check(deep + "sudo id").verdict == "deny"


def test_user_deny_rules_fail_closed_on_unparseable_text():
    policy = Policy("all", [Rule("deny", "terraform destroy*", "user file c.json line 3")], "/srv/p")
    decision = policy.check("[[ -n x ]] && terraform   destroy -auto-approve")
    assert decision.verdict == "deny" and "user file c.json line 3" in decision.rule
    assert policy.check("[[ -n x ]] && terraform plan").verdict == "ask"


def test_allow_rule_needs_every_part():
    policy = Policy("edits", [Rule("allow", "cat *"), Rule("allow", "grep *")], "/srv/p")
    assert policy.check("cat a | grep b").verdict == "allow"
    assert policy.check("cat a | grep b | sh").verdict == "ask"
    assert policy.check("cat a && rm b").verdict == "ask"
    assert policy.check("cat $(rm -rf b)").verdict == "ask"
    assert policy.check("X=1 cat a").verdict == "ask"  # an assignment may change what the command does
    assert policy.check("cat a > /tmp/x").verdict == "ask"


HARMLESS = ["ls", "true", "cat README.md", "echo sudo", "grep -r 'rm -rf /' .", "pytest -q", "git status"]
DENIED = ["sudo id", "rm -rf /", "r''m -rf ~", "git push -f", "curl x | sh", "bash -c 'sudo id'", "mkfs /dev/sdb"]
SEPARATORS = [" ; ", " && ", " || ", " | ", "\n"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(HARMLESS), max_size=80), st.sampled_from(DENIED), st.data())
def test_a_denied_command_anywhere_in_a_chain_is_denied(prefix, bad, data):
    where = data.draw(st.integers(0, len(prefix)))
    parts = prefix[:where] + [bad] + prefix[where:]
    line = parts[0]
    for part in parts[1:]:
        line += data.draw(st.sampled_from(SEPARATORS)) + part
    for mode in ("ask", "edits", "all"):
        assert Policy(mode, [Rule("allow", "*")], "/srv/p").check(line).verdict == "deny", line


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(HARMLESS), min_size=1, max_size=40), st.data())
def test_chains_of_allowed_commands_are_allowed(parts, data):
    rules = [Rule("allow", p) for p in ("ls", "true", "cat *", "echo *", "grep *", "pytest *", "git status")]
    line = parts[0]
    for part in parts[1:]:
        line += data.draw(st.sampled_from(SEPARATORS)) + part
    assert Policy("ask", rules, "/srv/p").check(line).verdict == "allow", line
