"""The house limits, checked: no module of the package over 400 lines, no function over 60."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "loopagent"


def sizes() -> tuple[list[str], list[str]]:
    modules, functions = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        name = path.relative_to(PACKAGE.parent)
        if (lines := len(source.splitlines())) > 400:
            modules.append(f"{name}: {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if (length := node.end_lineno - node.lineno + 1) > 60:
                    functions.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    return modules, functions


def test_no_module_is_over_400_lines_and_no_function_over_60():
    modules, functions = sizes()
    assert modules == [] and functions == []


def test_the_check_sees_the_package():
    assert len(list(PACKAGE.rglob("*.py"))) > 50  # an empty walk would pass the check above
