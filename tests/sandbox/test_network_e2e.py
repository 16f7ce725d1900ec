"""Network by host through the real `loop` and the real bwrap: a sandboxed Python reaches the allowed names
(test names pinned to 127.0.0.1 servers by a hosts file) through the proxy, and nothing else."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from loopagent.sandbox import open_sandbox, spec_from
from loopagent.sandbox.hosts import rules_from
from loopagent.sandbox.probe import probe
from tests.fakeserver import text, tools
from tests.sandbox.origin import Origin

needs_bwrap = pytest.mark.skipif(not probe(os.environ.get("PATH")).works,
                                 reason=f"no working bwrap here: {probe(os.environ.get('PATH')).problem}")

# Run inside the sandbox: each fetch prints one line; the proxy comes from the variables loop set.
CLIENT = """\
import http.client, os, sys, urllib.error, urllib.request
from concurrent.futures import ThreadPoolExecutor
port = int(sys.argv[1])
def get(host):
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/", timeout=20) as r:
            return f"{r.status} {r.read().decode()}"
    except urllib.error.HTTPError as e:
        return f"{e.code} {e.read().decode().strip()}"
    except OSError as e:
        return f"failed {e}"
def tunnel(host):
    proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
    c = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=20)
    c.set_tunnel(host, port)  # CONNECT, then plain HTTP inside (TLS would pass the same way)
    try:
        c.request("GET", "/")
        r = c.getresponse()
        return f"{r.status} {r.read().decode()}"
    except OSError as e:
        return f"refused {e}"
for host in sys.argv[2:]:
    print(host, "->", get(host))
print("tunnel pkg.test ->", tunnel("pkg.test"))
print("tunnel other.test ->", tunnel("other.test"))
with ThreadPoolExecutor(16) as pool:
    print("parallel", sum(r == "200 hello pkg.test" for r in pool.map(lambda _: get("pkg.test"), range(48))), "of 48")
"""


@needs_bwrap
def test_a_sandboxed_command_reaches_allowed_names_only_and_the_result_names_the_rest(run_loop, server, tmp_path):
    ws, home, tmp = tmp_path / "ws", tmp_path / "loop-home", tmp_path / "tmp"
    for d in (ws / ".loop", home, tmp):
        d.mkdir(parents=True)
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 pkg.test other.test a.wild.test named.wild.test\n")
    (home / "config.json").write_text(json.dumps({"network_allow": ["pkg.test", "*.wild.test"],
                                                  "network_hosts": str(hosts)}))
    # A hostile project file tries to add a host: only the intersection with the user's list holds.
    (ws / ".loop" / "config.json").write_text(json.dumps({"network_allow": ["pkg.test", "*.wild.test", "other.test"]}))
    (ws / "client.py").write_text(CLIENT)
    with Origin() as origin:
        marker = f"{origin.port} pkg.test other.test a.wild.test named.wild.test"
        server.add(tools(("shell", {"command": f"python3 client.py {marker}"})), text("done"))
        proc = run_loop("agent", "-C", str(ws), "--base-url", server.url, "--json", "--no-checkpoints",
                        "--approval", "all", "--allow-host", "named.wild.test", "fetch", env={"TMPDIR": str(tmp)})
    assert proc.returncode == 0, proc.stderr
    [result] = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    port = origin.port
    assert "pkg.test -> 200 hello pkg.test" in result
    assert f"other.test -> 403 loop: blocked other.test:{port} (not in network_allow)" in result
    assert f"a.wild.test -> 403 loop: blocked a.wild.test:{port} (resolves to the local address 127.0.0.1" in result
    assert "named.wild.test -> 200 hello named.wild.test" in result  # named exactly: loopback allowed
    assert "tunnel pkg.test -> 200 hello pkg.test" in result
    assert "tunnel other.test -> refused Tunnel connection failed: 403 Forbidden" in result
    assert "parallel 48 of 48" in result
    assert f"\nnetwork: blocked other.test:{port} (not in network_allow)\n" in result  # the call's result line
    assert "network: blocked a.wild.test" in result
    assert "other.test" not in origin.hosts and "a.wild.test" not in origin.hosts
    assert 'ignored "network_allow" entries ["other.test"]' in proc.stderr
    warnings = [json.loads(line) for line in proc.stdout.splitlines() if '"warning"' in line]
    assert any("network: blocked other.test" in json.dumps(w) for w in warnings)  # the terminal's copy
    # After the run: no proxy socket left, no bridge (its command line holds the marker) left running.
    assert list(tmp.iterdir()) == []
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and marker in cmdline(p)]


def cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def fetch(spec, port: int, tmp_path: Path) -> str:
    """Run a sandboxed urllib fetch of the origin on loopback under `spec`; its output."""
    box = open_sandbox(spec, os.environ)
    code = (f"import urllib.request\ntry:\n print(urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=10)"
            ".read().decode())\nexcept OSError as e:\n print('failed', e)")
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}  # the host's own, if any: not here
    started = box.executor.spawn([sys.executable, "-c", code], str(tmp_path), env)
    try:
        out = started.proc.communicate(timeout=30)[0].decode()
    finally:
        started.close()
        box.executor.close()
    return out


@needs_bwrap
def test_no_rule_means_no_network_and_network_still_means_all(tmp_path):
    with Origin() as origin:
        none = fetch(spec_from("workspace-write", tmp_path, os.environ, hosts=rules_from([])), origin.port, tmp_path)
        assert none.startswith("failed") and origin.hosts == []
        everything = spec_from("workspace-write", tmp_path, os.environ, network=True, hosts=rules_from(["pkg.test"]))
        assert not everything.proxied and everything.describe().endswith("network on")
        assert fetch(everything, origin.port, tmp_path) == "hello 127.0.0.1\n"  # straight, not through the proxy
        assert origin.hosts == ["127.0.0.1"]


def test_policy_check_says_which_hosts_a_command_may_reach(run_loop, tmp_path, loop_home):
    loop_home.mkdir()
    (loop_home / "config.json").write_text(json.dumps({"network_allow": ["pypi", "example.org:8443"],
                                                       "network_deny": ["evil.example.org"]}))
    proc = run_loop("policy", "check", "-C", str(tmp_path), "pip install -e .")
    line = "network only to pypi (pypi.org, files.pythonhosted.org), example.org:8443; never evil.example.org"
    if probe(os.environ.get("PATH")).works:
        assert f"sandbox: sandboxed: workspace writable, {line}" in proc.stdout
    bad = run_loop("policy", "check", "-C", str(tmp_path), "true", env={"LOOP_NETWORK_ALLOW": '["http://x"]'})
    assert bad.returncode == 2 and "LOOP_NETWORK_ALLOW" in bad.stderr and "without a scheme" in bad.stderr and "Traceback" not in bad.stderr
