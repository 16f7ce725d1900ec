"""The permission policy: allow, ask or deny for each call before it runs. Pure: no I/O.

decision  the answer (Decision) and the approval modes
rules     a user's allow/deny rules and how they match
judge     the Policy: one decision per call
builtin   the built-in rules (sudo, rm -r of /, force pushes, protected paths, ...)
parse     the shell parser: a command line as the simple commands bash would run
wrappers  programs that run programs, and options that change what runs
quoting   bash quoting read from source text
paths     path arithmetic on strings
unparseable  what the parser cannot read, with the reason
plan     approval mode plan: nothing changes the workspace
"""

from .decision import MODES, SANDBOX_STATES, STRICTNESS, Decision, Verdict, stricter
from .judge import Policy, policy_for
from .rules import TOOL_RULE, Rule

__all__ = ["MODES", "SANDBOX_STATES", "STRICTNESS", "TOOL_RULE", "Decision", "Policy", "Rule", "Verdict", "policy_for",
           "stricter"]
