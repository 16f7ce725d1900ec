"""The package's shape, checked: imports go one way between folders.

No import circle joins modules of different folders of loopagent/, and no module imports from a
folder above its own (a subfolder is composed by its parent, not the other way round; the top-level
modules, messages, events, errors and the like, are the shared base every folder may use). Every
import counts: at the top, inside a function, or for type checking alone, since each is a
dependency a reader has to follow. The sizes (400 lines a module, 60 a function) are guidance in
AGENTS.md, not a check here.

What breaks a rule today is listed below by name, so a new one fails and a fixed one must leave the list.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "loopagent"

KNOWN_CIRCLES: list[list[str]] = []
KNOWN_UPWARD: list[str] = []


def modules(package: Path) -> dict[str, Path]:
    """Every module of `package` by dotted name; a package's `__init__` is the package itself."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if "sample" in parts:  # the demo's bundled project, not ours
            continue
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of `known` that module `name` imports anywhere, relative imports resolved."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
            # `from pkg import mod` imports mod; `from pkg import name` imports pkg
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}
    return (found & known) - {name}


def folder(path: Path, package: Path) -> str:
    return ".".join(path.parent.relative_to(package.parent).parts)


@cache
def imports(package: Path) -> dict[str, set[str]]:
    files = modules(package)
    return {m: imported(m, p, set(files)) for m, p in files.items()}


@cache
def circles(package: Path) -> list[list[str]]:
    """The import circles (strongly connected modules) whose members sit in more than one folder."""
    files = modules(package)
    graph = imports(package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in sorted(graph):  # Tarjan's algorithm without recursion
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = stack[stack.index(node):]
                    del stack[stack.index(node):]
                    if len({folder(files[m], package) for m in part}) > 1:
                        found.append(sorted(part))
    return sorted(found)


@cache
def upward(package: Path) -> list[str]:
    """Imports from a module into a folder above its own (the package's top folder excepted)."""
    files = modules(package)
    top = package.name
    found = []
    for name, path in files.items():
        here = folder(path, package)
        for other in sorted(imports(package)[name]):
            there = folder(files[other], package)
            if there != top and here.startswith(there + "."):
                found.append(f"{name} -> {other}")
    return sorted(found)


def test_no_new_import_circle_spans_two_folders():
    assert [c for c in circles(PACKAGE) if c not in KNOWN_CIRCLES] == []


def test_no_new_module_imports_from_a_folder_above_it():
    assert [u for u in upward(PACKAGE) if u not in KNOWN_UPWARD] == []


def test_the_known_lists_hold_only_what_is_still_there():
    # a fixed one leaves the list, so it cannot come back unnoticed
    assert [c for c in KNOWN_CIRCLES if c not in circles(PACKAGE)] == []
    assert [u for u in KNOWN_UPWARD if u not in upward(PACKAGE)] == []


def test_the_checks_see_a_circle_and_an_upward_import(tmp_path):
    package = tmp_path / "pkg"
    for name, text in {
        "__init__.py": "",
        "base.py": "from pkg.a import thing\n",  # base -> a/ -> base: a circle across two folders
        "a/__init__.py": "",
        "a/thing.py": "def f():\n    from ..base import x  # lazy, relative: still an import\n",
        "a/b/__init__.py": "",
        "a/b/leaf.py": "from pkg.a import thing\n",  # a/b/ reaching up into a/
        "c/__init__.py": "",
        "c/one.py": "from . import two\n",  # a circle inside one folder is that folder's business
        "c/two.py": "from pkg.c import one\n",
    }.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    assert circles(package) == [["pkg.a.thing", "pkg.base"]]
    assert upward(package) == ["pkg.a.b.leaf -> pkg.a.thing"]


def test_the_check_sees_the_package():
    assert len(modules(PACKAGE)) > 50  # an empty walk would pass the checks above
    assert sum(map(len, imports(PACKAGE).values())) > 200
