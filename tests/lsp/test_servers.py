"""Which server a file gets (the lsp setting, else the known servers on PATH in their order), what the
setting accepts, what a project file may do with it, and what `loop doctor` lists."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from loopagent.config import load_config
from loopagent.errors import ConfigError
from loopagent.lsp.servers import Choice, Document, choose, document_of, lsp_rows

PY = Document("python", "python")


def programs(where: Path, *names: str) -> str:
    """A PATH directory holding executables of these names."""
    where.mkdir(exist_ok=True)
    for name in names:
        (where / name).write_text("#!/bin/sh\n")
        (where / name).chmod(stat.S_IRWXU)
    return str(where)


def test_files_get_their_language_by_extension():
    assert document_of("/w/a.py", {}) == PY
    assert document_of("/w/App.TSX", {}) == Document("typescript", "typescriptreact")
    assert document_of("/w/x.mjs", {}) == Document("typescript", "javascript")
    assert document_of("/w/main.go", {}) == Document("go", "go")
    assert document_of("/w/notes.txt", {}) is None and document_of("/w/Makefile", {}) is None
    assert document_of("/w/init.lua", {".lua": {"command": ["lua-ls"]}}) == Document(".lua", "lua")


def test_known_python_servers_are_tried_in_their_stated_order(tmp_path):
    path = programs(tmp_path / "bin", "pylsp", "pyright-langserver")
    assert choose(PY, ".py", {}, path) == Choice("python", ("pyright-langserver", "--stdio"), "found on PATH")
    programs(tmp_path / "bin", "basedpyright-langserver")
    assert choose(PY, ".py", {}, path).command == ("basedpyright-langserver", "--stdio")
    assert choose(PY, ".py", {}, programs(tmp_path / "only", "pylsp")).command == ("pylsp",)
    assert choose(PY, ".py", {}, str(tmp_path / "empty")) is None


def test_the_users_entry_wins_by_extension_language_or_key_and_false_turns_one_off(tmp_path):
    path = programs(tmp_path / "bin", "pylsp")
    assert choose(PY, ".py", {"python": {"command": ["my-ls", "-v"]}}, path).command == ("my-ls", "-v")
    assert choose(PY, ".py", {".py": {"command": ["by-ext"]}, "python": {"command": ["x"]}}, path).command == (
        "by-ext",)
    assert choose(PY, ".py", {"python": False}, path) is None
    tsx = Document("typescript", "typescriptreact")
    assert choose(tsx, ".tsx", {"typescriptreact": {"command": ["tsx-ls"]}}, path).origin == "lsp setting"


def write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("value, problem", [
    ({"python": {"command": []}}, 'python: give {"command"'),
    ({"python": {"command": "pylsp"}}, 'python: give {"command"'),
    ({"python": {"command": ["pylsp"], "args": []}}, "unknown key 'args'"),
    ({"python": "pylsp"}, 'python: give {"command"'),
    ({"python": {"command": ["./bin/pylsp"]}}, "python: the program must be a name on PATH or an absolute path"),
    (["pylsp"], "lsp"),
])
def test_a_bad_lsp_setting_is_one_line_naming_the_file(tmp_path, value, problem):
    home = tmp_path / "home"
    write(home / "config.json", {"lsp": value})
    with pytest.raises(ConfigError, match=problem) as caught:
        load_config(tmp_path, {}, {"LOOP_HOME": str(home)})
    assert "config.json line 1" in str(caught.value) and "\n" not in str(caught.value)


def test_a_project_file_may_turn_lsp_off_and_shorten_its_wait_but_never_name_a_command(tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    write(home / "config.json", {"lsp": {"python": {"command": ["pylsp"]}}, "lsp_timeout": 5})
    write(ws / ".loop" / "config.json", {"lsp": {"python": {"command": ["evil"]}}, "lsp_timeout": 60})
    config = load_config(ws, {}, {"LOOP_HOME": str(home)})
    assert config.settings.lsp == {"python": {"command": ["pylsp"]}} and config.settings.lsp_timeout == 5
    assert [w for w in config.warnings if '"lsp"' in w and "evil" in w]
    assert [w for w in config.warnings if '"lsp_timeout"' in w]
    write(ws / ".loop" / "config.json", {"lsp": False, "lsp_timeout": 2})
    config = load_config(ws, {}, {"LOOP_HOME": str(home)})
    assert config.settings.lsp is False and config.settings.lsp_timeout == 2 and not config.warnings
    write(ws / ".loop" / "config.json", {"lsp": {}})  # {} is "the known servers", not "off": ignored
    assert load_config(ws, {}, {"LOOP_HOME": str(home)}).settings.lsp == {"python": {"command": ["pylsp"]}}
    assert load_config(ws, {"lsp": False}, {"LOOP_HOME": str(home)}).settings.lsp is False  # --no-lsp


def test_doctor_rows_say_what_each_language_would_use(tmp_path):
    path = programs(tmp_path / "bin", "pylsp", "gopls")
    rows = lsp_rows({"typescript": False, ".lua": {"command": ["lua-ls"]}}, path)
    assert rows == [("lsp python", "pylsp", "found on PATH"), ("lsp typescript", "-", "off in the lsp setting"),
                    ("lsp go", "gopls", "found on PATH"), ("lsp rust", "-", "no known server on PATH"),
                    ("lsp .lua", "-", "lua-ls not found (lsp setting)")]
    assert lsp_rows(False, path) == [("lsp", "off", "the lsp setting is false")]


def test_a_server_planted_in_the_working_directory_is_not_found_through_a_relative_path_entry(tmp_path, monkeypatch):
    planted = programs(tmp_path / "ws", "pylsp")
    monkeypatch.chdir(planted)
    assert choose(PY, ".py", {}, f".::{tmp_path / 'empty'}") is None
    assert choose(PY, ".py", {}, planted).command == ("pylsp",)  # the same file through an absolute entry
