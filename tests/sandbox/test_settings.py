"""Sandbox settings: layered like the others, and a project file may only tighten them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopagent.config import load_config
from loopagent.errors import ConfigError


def project(ws: Path, data: dict) -> None:
    (ws / ".loop").mkdir(exist_ok=True)
    (ws / ".loop" / "config.json").write_text(json.dumps(data, indent=2) + "\n")


def user(loop_home: Path, data: dict) -> None:
    loop_home.mkdir(parents=True, exist_ok=True)
    (loop_home / "config.json").write_text(json.dumps(data) + "\n")


def test_defaults(tmp_path):
    s = load_config(tmp_path, {}, {"LOOP_HOME": str(tmp_path / "h")}).settings
    assert (s.sandbox, s.sandbox_network, s.sandbox_writable) == ("workspace-write", False, [])


@pytest.mark.parametrize(("user_mode", "project_mode", "effective"), [
    ("off", "workspace-write", "workspace-write"), ("off", "read-only", "read-only"),
    ("workspace-write", "read-only", "read-only"), ("workspace-write", "off", "workspace-write"),
    ("read-only", "workspace-write", "read-only"),
])
def test_a_project_file_may_only_make_the_sandbox_stricter(tmp_path, user_mode, project_mode, effective):
    user(tmp_path / "h", {"sandbox": user_mode})
    project(tmp_path, {"sandbox": project_mode})
    config = load_config(tmp_path, {}, {"LOOP_HOME": str(tmp_path / "h")})
    assert config.settings.sandbox == effective
    ignored = [w for w in config.warnings if '"sandbox"' in w]
    assert len(ignored) == (effective != project_mode)


def test_a_project_file_may_turn_the_network_off_but_not_on_nor_add_writable_dirs(tmp_path):
    user(tmp_path / "h", {"sandbox_network": True})
    project(tmp_path, {"sandbox_network": False})
    assert load_config(tmp_path, {}, {"LOOP_HOME": str(tmp_path / "h")}).settings.sandbox_network is False
    user(tmp_path / "h", {})
    project(tmp_path, {"sandbox_network": True, "sandbox_writable": ["/"]})
    config = load_config(tmp_path, {}, {"LOOP_HOME": str(tmp_path / "h")})
    assert config.settings.sandbox_network is False and config.settings.sandbox_writable == []
    assert [w.split("ignored ")[1].split(":")[0] for w in config.warnings] == ['"sandbox_network"', '"sandbox_writable"']
    assert "config.json line 2" in config.warnings[0]


def test_the_user_may_choose_off_by_file_environment_or_flag(tmp_path):
    env = {"LOOP_HOME": str(tmp_path / "h")}
    assert load_config(tmp_path, {"sandbox": "off"}, env).sources["sandbox"] == "command line"
    assert load_config(tmp_path, {}, {**env, "LOOP_SANDBOX": "off"}).settings.sandbox == "off"
    user(tmp_path / "h", {"sandbox": "off", "sandbox_writable": ["~/.cache"]})
    config = load_config(tmp_path, {"sandbox_network": True}, env)
    assert (config.settings.sandbox, config.settings.sandbox_writable, config.settings.sandbox_network) == (
        "off", ["~/.cache"], True)


def test_an_unknown_mode_names_the_file_and_line(tmp_path):
    user(tmp_path / "h", {"sandbox": "none"})
    with pytest.raises(ConfigError, match=r"config.json line 1: sandbox must be one of workspace-write, read-only, off, not 'none'"):
        load_config(tmp_path, {}, {"LOOP_HOME": str(tmp_path / "h")})
