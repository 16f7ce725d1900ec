"""network_allow, network_deny and network_hosts as settings: the layers, and a project file only narrows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopagent.config import load_config
from loopagent.errors import ConfigError
from loopagent.sandbox.spec import spec_from_settings


def write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def test_allow_host_adds_to_the_user_file_and_a_project_file_cannot_add_a_host(tmp_path):
    env = {"LOOP_HOME": str(tmp_path / "h")}
    write(tmp_path / "h" / "config.json", {"network_allow": ["pypi", "github"], "network_deny": ["gist.github.com"]})
    write(tmp_path / ".loop" / "config.json", {"network_allow": ["pypi", "attacker.example"],
                                              "network_deny": ["files.pythonhosted.org"]})
    config = load_config(tmp_path, {"network_allow": ["registry.npmjs.org"]}, env)
    assert config.settings.network_allow == ["pypi", "registry.npmjs.org"]  # github narrowed away, attacker dropped
    assert config.settings.network_deny == ["gist.github.com", "files.pythonhosted.org"]  # deny only adds
    [warning] = config.warnings
    assert 'ignored "network_allow" entries ["attacker.example"]' in warning and "config.json line 2" in warning
    spec = spec_from_settings(config.settings, tmp_path, env)
    assert spec.proxied
    assert spec.hosts.judge("attacker.example", 443)[1] is None
    assert spec.hosts.judge("files.pythonhosted.org", 443)[0].why == "network_deny files.pythonhosted.org"


def test_a_project_file_without_a_user_list_opens_nothing(tmp_path):
    write(tmp_path / ".loop" / "config.json", {"network_allow": ["pypi"], "network_hosts": "/etc/hosts"})
    config = load_config(tmp_path, {}, {"LOOP_HOME": str(tmp_path / "h")})
    assert config.settings.network_allow == [] and config.settings.network_hosts is None
    assert not spec_from_settings(config.settings, tmp_path, {}).proxied
    assert len(config.warnings) == 2


def test_the_environment_adds_hosts_too(tmp_path):
    env = {"LOOP_HOME": str(tmp_path / "h"), "LOOP_NETWORK_ALLOW": '["*.example.org:8443"]'}
    assert load_config(tmp_path, {}, env).settings.network_allow == ["*.example.org:8443"]


@pytest.mark.parametrize(("values", "says"), [
    ({"network_allow": ["https://pypi.org/simple"]}, "network_allow: 'https://pypi.org/simple' is not a host"),
    ({"network_deny": ["*"]}, "network_deny: '*' is not a host"),
    ({"network_hosts": "/no/such/hosts"}, "network_hosts: '/no/such/hosts' is no file"),
])
def test_a_bad_entry_is_one_line_naming_file_line_and_entry(tmp_path, values, says):
    write(tmp_path / "h" / "config.json", values)
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path, {}, {"LOOP_HOME": str(tmp_path / "h")})
    assert "config.json line 2" in str(err.value) and says in str(err.value) and "\n" not in str(err.value)


def test_a_bad_allow_host_flag_is_named_as_typed(tmp_path):
    with pytest.raises(ConfigError, match=r"^--allow-host: 'https://pypi.org' is not a host"):
        load_config(tmp_path, {"network_allow": ["https://pypi.org"]}, {"LOOP_HOME": str(tmp_path / "h")})
