"""network_allow and network_deny as the proxy applies them (loopagent/sandbox/hosts.py), by value."""

from __future__ import annotations

import pytest

from loopagent.sandbox.hosts import PRESETS, narrow, parse, rules_from


def decide(allow, deny=(), host="pypi.org", port=443, addresses=("151.101.0.223",)):
    rules = rules_from(allow, deny)
    refused, entry = rules.judge(host, port)
    return refused if refused is not None else rules.check(host, port, entry, list(addresses))


@pytest.mark.parametrize(("allow", "host", "port", "allowed"), [
    (["pypi.org"], "pypi.org", 443, True),
    (["pypi.org"], "evil.org", 443, False),
    (["pypi.org"], "pypi.org.evil.org", 443, False),  # no suffix match without a wildcard
    (["pypi.org"], "files.pypi.org", 443, False),
    (["*.example.org"], "example.org", 443, True),  # the wildcard also matches the apex
    (["*.example.org"], "a.b.example.org", 80, True),
    (["*.example.org"], "badexample.org", 443, False),
    (["pypi.org:443"], "pypi.org", 443, True),
    (["pypi.org:443"], "pypi.org", 22, False),  # HOST:PORT narrows to that port
    (["*.example.org:8443"], "x.example.org", 443, False),
    (["PyPI.org."], "pypi.org", 443, True),  # case and the trailing dot do not matter
    (["pypi"], "files.pythonhosted.org", 443, True),
    (["pypi"], "pythonhosted.org", 443, False),
    (["github"], "github.com", 443, True),
    (["github"], "objects.githubusercontent.com", 443, True),
    (["npm"], "registry.npmjs.org", 443, True),
    (["debian"], "deb.debian.org", 80, True),
    ([], "pypi.org", 443, False),  # no rule: no network
])
def test_allow_entries_match_hosts_wildcards_ports_and_presets(allow, host, port, allowed):
    verdict = decide(allow, host=host, port=port)
    assert verdict.allowed is allowed
    if not allowed:
        assert verdict.why == "not in network_allow"


def test_deny_wins_over_allow_and_names_its_entry():
    verdict = decide(["*.example.org"], ["bad.example.org"], host="bad.example.org")
    assert not verdict.allowed and verdict.why == "network_deny bad.example.org"
    assert decide(["*.example.org"], ["bad.example.org"], host="good.example.org").allowed


def test_deny_of_an_address_holds_for_every_name_resolving_to_it():
    verdict = decide(["pypi.org"], ["151.101.0.223"])
    assert not verdict.allowed and "151.101.0.223 is in network_deny" in verdict.why


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "192.168.0.5", "172.16.0.1", "169.254.169.254",
                                     "::1", "fe80::1%eth0", "fd00::5", "::ffff:127.0.0.1", "0.0.0.0"])
def test_a_name_resolving_to_a_local_address_is_refused_unless_named(address):
    through_wildcard = decide(["*.example.org"], host="mirror.example.org", addresses=[address])
    assert not through_wildcard.allowed and f"local address {address}" in through_wildcard.why
    through_preset = decide(["pypi"], host="pypi.org", addresses=["8.8.8.8", address])  # one bad answer is enough
    assert not through_preset.allowed
    named = decide(["*.example.org", "mirror.example.org"], host="mirror.example.org", addresses=[address])
    assert named.allowed and named.addresses == (address,)


def test_an_allowed_name_connects_only_to_the_addresses_checked():
    verdict = decide(["pypi"], addresses=["151.101.0.223", "151.101.64.223"])
    assert verdict.allowed and verdict.addresses == ("151.101.0.223", "151.101.64.223")
    assert not decide(["pypi"], addresses=[]).allowed  # no answer from DNS: nothing to connect to


@pytest.mark.parametrize("bad", ["", "*", "*foo.org", "http://pypi.org", "pypi.org:0", "pypi.org:99999",
                                 "pypi.org:http", "a b.org", "*.10.0.0.1", "[::1"])
def test_a_bad_entry_is_a_value_error_naming_it(bad):
    with pytest.raises(ValueError, match="port|host|wildcard"):
        parse(bad)


def test_addresses_parse_with_and_without_ports():
    assert [(e.name, e.port) for e in parse("10.0.0.5")] == [("10.0.0.5", None)]
    assert [(e.name, e.port) for e in parse("[fd00::1]:8080")] == [("fd00::1", 8080)]


@pytest.mark.parametrize(("user", "project", "kept", "dropped"), [
    (["pypi", "github"], ["pypi"], ["pypi"], []),
    (["pypi"], ["pypi", "evil.org"], ["pypi"], ["evil.org"]),  # a project file cannot add a host
    (["pypi"], ["pypi.org"], ["pypi.org"], []),
    (["pypi"], ["*.org"], ["pypi"], ["*.org"]),  # a wider project entry keeps only the user's inside it
    (["pypi", "example.com"], ["*.pypi.org"], ["pypi.org"], ["*.pypi.org"]),
    (["*.example.org"], ["a.example.org"], ["a.example.org"], []),
    (["pypi.org:443"], ["pypi"], ["pypi.org:443"], ["pypi"]),
    (["pypi.org"], ["pypi.org:443"], ["pypi.org:443"], []),
    ([], ["pypi"], [], ["pypi"]),
    (["pypi"], [], [], []),
])
def test_a_project_list_is_intersected_with_the_users(user, project, kept, dropped):
    assert narrow(user, project) == (kept, dropped)
    effective = rules_from(kept)
    for host in ("pypi.org", "files.pythonhosted.org", "evil.org", "a.example.org", "b.example.org"):
        if effective.judge(host, 443)[1] is not None:  # whatever the result lets through, the user's list did
            assert rules_from(user).judge(host, 443)[1] is not None


def test_describe_names_the_hosts_a_command_may_reach():
    assert rules_from(["pypi", "example.org:8080"], ["bad.org"]).describe() == (
        "network only to pypi (pypi.org, files.pythonhosted.org), example.org:8080; never bad.org")
    assert rules_from([]).describe() == "no network"
    assert set(PRESETS) == {"pypi", "npm", "debian", "github"}


def test_a_failed_download_under_the_proxy_is_told_what_it_may_reach():
    from loopagent.sandbox.spec import SandboxSpec
    from loopagent.sandbox.walls import wall_note

    proxied = SandboxSpec("workspace-write", "/ws", hosts=rules_from(["pypi"]))
    note = wall_note("curl: (6) Could not resolve host: example.org", proxied, 6, "curl https://example.org")
    assert "only the hosts in network_allow" in note and "--allow-host HOST" in note
    assert "--allow-host" not in wall_note("Could not resolve host", SandboxSpec("workspace-write", "/ws"), 6)


def test_the_bwrap_line_binds_the_door_sets_the_proxy_and_puts_the_bridge_first():
    import sys

    from loopagent.sandbox.bwrap import INSIDE_DOOR, bwrap_argv
    from loopagent.sandbox.layout import Layout
    from loopagent.sandbox.spec import SandboxSpec

    spec = SandboxSpec("workspace-write", "/ws", hosts=rules_from(["pypi"]))
    argv = bwrap_argv(spec, Layout(), ["bash", "-c", "pip install ."], door="/tmp/loop-net-x/1.sock")
    assert "--unshare-net" in argv
    i = argv.index("/tmp/loop-net-x/1.sock")
    assert argv[i - 1:i + 2] == ["--ro-bind", "/tmp/loop-net-x/1.sock", INSIDE_DOOR]
    env = {argv[k + 1]: argv[k + 2] for k, word in enumerate(argv) if word == "--setenv"}
    for name in ("HTTP_PROXY", "https_proxy", "ALL_PROXY", "PIP_PROXY", "npm_config_https_proxy"):
        assert env[name] == "http://127.0.0.1:3128"
    assert env["NO_PROXY"] == env["no_proxy"] == "localhost,127.0.0.1,::1" and env["NODE_USE_ENV_PROXY"] == "1"
    command = argv[argv.index("--") + 1:]
    imports = [line for line in command[4].splitlines() if line.startswith(("import ", "from "))]
    assert command[:4] == [sys.executable, "-I", "-S", "-c"] and imports == ["import _socket", "import os", "import sys"]
    assert command[5:] == [INSIDE_DOOR, "3128", "bash", "-c", "pip install ."]
    assert "--setenv" not in bwrap_argv(spec, Layout(), ["true"])  # no door: the line as before
