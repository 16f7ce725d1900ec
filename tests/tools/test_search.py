"""list_files and grep on a fixture tree with .gitignore files: ripgrep and the Python walk agree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loopagent.errors import ToolError
from loopagent.tools.base import ToolContext
from loopagent.tools.search import GREP_MAX, LIST_MAX, Grep, GrepParams, ListFiles, ListParams, find_rg

RG = find_rg()
IMPLS = [pytest.param(RG, id="rg", marks=pytest.mark.skipif(RG is None, reason="rg not installed")),
         pytest.param(None, id="python")]

TREE = {
    ".gitignore": "build/\n*.log\n!keep.log\n/top-only.txt\nsecrets/\n",
    ".git/info/exclude": "local-notes.md\n",
    ".git/HEAD": "ref: refs/heads/main  needle\n",
    ".github/workflows/ci.yml": "run: pytest  # needle\n",
    "README.md": "Needle in the readme\n",
    "top-only.txt": "needle at the top\n",
    "local-notes.md": "needle in a locally excluded file\n",
    "keep.log": "needle kept log\n",
    "debug.log": "needle ignored log\n",
    "build/out.py": "needle = 'build output'\n",
    "secrets/key.txt": "needle secret\n",
    "src/app.py": "import os\n\ndef needle():\n    return 'NEEDLE'\n",
    "src/top-only.txt": "needle: only the root one is ignored\n",
    "src/.gitignore": "*.tmp\ngenerated/\n!important.tmp\n",
    "src/cache.tmp": "needle tmp\n",
    "src/important.tmp": "needle important\n",
    "src/generated/gen.py": "needle generated\n",
    "src/lib/util.py": "def helper():\n    pass  # needle\n",
    "src/lib/build/nested.py": "needle nested build dir\n",
    "src/web/app.ts": "const needle = 1;\n",
    "src/web/view.tsx": "export const Needle = () => null;\n",
    "docs/guide.md": "the needle guide\r\nsecond line\r\n",
}


@pytest.fixture
def c(tmp_path: Path) -> ToolContext:
    """A workspace that is not a git repository by itself, only a .git directory with info/exclude."""
    from loopagent.tools.workspace import Workspace

    root = tmp_path / "ws"
    for rel, text in TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, newline="")
    (root / "src" / "blob.bin").write_bytes(b"needle\x00\x01\x02")
    (root / "src" / "link.py").symlink_to(root / "src" / "app.py")
    return ToolContext(Workspace(root))


def listing(c, rg, **kw) -> list[str]:
    return ListFiles(rg).run(ListParams(**kw), c).content.splitlines()


def grep(c, rg, **kw) -> list[str]:
    return Grep(rg).run(GrepParams(**kw), c).content.splitlines()


@pytest.mark.parametrize("rg", IMPLS)
def test_list_files_respects_gitignore_without_git(c, rg):
    assert listing(c, rg) == [
        ".github/workflows/ci.yml", ".gitignore", "README.md", "docs/guide.md", "keep.log", "src/.gitignore",
        "src/app.py", "src/blob.bin", "src/important.tmp", "src/lib/util.py", "src/top-only.txt",
        "src/web/app.ts", "src/web/view.tsx",
    ]


@pytest.mark.parametrize("rg", IMPLS)
def test_list_files_under_a_path_keeps_the_parents_rules(c, rg):
    # build/ comes from the root .gitignore, generated/ and *.tmp from src/.gitignore.
    assert listing(c, rg, path="src/lib") == ["src/lib/util.py"]
    assert listing(c, rg, path="src", pattern="*.tmp") == ["src/important.tmp"]
    assert listing(c, rg, path="src/web/app.ts") == ["src/web/app.ts"]


@pytest.mark.parametrize("rg", IMPLS)
def test_list_files_glob_patterns(c, rg):
    assert listing(c, rg, pattern="**/*.py") == ["src/app.py", "src/lib/util.py"]
    assert listing(c, rg, pattern="*.{ts,tsx}") == ["src/web/app.ts", "src/web/view.tsx"]
    assert listing(c, rg, pattern="src/*.py") == ["src/app.py"]
    assert listing(c, rg, path="src", pattern="lib/*.py") == ["src/lib/util.py"]
    assert listing(c, rg, pattern="*.rs") == ["no files match '*.rs'"]


@pytest.mark.parametrize("rg", IMPLS)
def test_grep_lines_are_sorted_path_line_text(c, rg):
    assert grep(c, rg, pattern="needle") == [
        ".github/workflows/ci.yml:1:run: pytest  # needle",
        "docs/guide.md:1:the needle guide",
        "keep.log:1:needle kept log",
        "src/app.py:3:def needle():",
        "src/important.tmp:1:needle important",
        "src/lib/util.py:2:    pass  # needle",
        "src/top-only.txt:1:needle: only the root one is ignored",
        "src/web/app.ts:1:const needle = 1;",
    ]


@pytest.mark.parametrize("rg", IMPLS)
def test_grep_case_glob_and_path(c, rg):
    assert grep(c, rg, pattern="needle", ignore_case=True, path="src", glob="*.py") == [
        "src/app.py:3:def needle():", "src/app.py:4:    return 'NEEDLE'", "src/lib/util.py:2:    pass  # needle",
    ]
    assert grep(c, rg, pattern="Needle", glob="*.{md,tsx}") == [
        "README.md:1:Needle in the readme", "src/web/view.tsx:1:export const Needle = () => null;",
    ]
    assert grep(c, rg, pattern="needle", glob="!*.py", path="src") == [
        "src/important.tmp:1:needle important",
        "src/top-only.txt:1:needle: only the root one is ignored",
        "src/web/app.ts:1:const needle = 1;",
    ]
    assert grep(c, rg, pattern="needle", path="src/lib/util.py") == ["src/lib/util.py:2:    pass  # needle"]
    assert grep(c, rg, pattern="no such text") == ["no matches for 'no such text'"]


def test_rg_and_python_give_identical_results(c):
    if RG is None:
        pytest.skip("rg not installed")
    queries = [{"pattern": p, **kw} for p in ["needle", "^def ", "e{2}", r"\bconst\b"]
               for kw in [{}, {"ignore_case": True}, {"path": "src"}, {"glob": "*.py"}, {"glob": "src/**"}]]
    for q in queries:
        assert Grep(RG).run(GrepParams(**q), c) == Grep(None).run(GrepParams(**q), c), q
    for q in [{}, {"path": "src"}, {"pattern": "*.md"}, {"pattern": "docs"}, {"path": "src", "pattern": "web/*"}]:
        assert ListFiles(RG).run(ListParams(**q), c) == ListFiles(None).run(ListParams(**q), c), q


@pytest.mark.parametrize("rg", IMPLS)
def test_outputs_are_capped_with_a_count_of_what_was_cut(tmp_path, rg):
    from loopagent.tools.workspace import Workspace

    for i in range(LIST_MAX + 37):
        (tmp_path / f"f{i:04}.txt").write_text("hit\nhit\n" if i < 150 else "miss\n")
    c = ToolContext(Workspace(tmp_path))
    files = listing(c, rg)
    assert len(files) == LIST_MAX + 1 and files[0] == "f0000.txt"
    assert files[-1] == "[37 more files not shown; narrow with path= or pattern=]"
    lines = grep(c, rg, pattern="hit")
    assert len(lines) == GREP_MAX + 1 and lines[0] == "f0000.txt:1:hit" and lines[GREP_MAX - 1] == "f0099.txt:2:hit"
    assert lines[-1].startswith("[100 more matches not shown; 300 in 150 files;")


@pytest.mark.parametrize("rg", IMPLS)
def test_long_matching_lines_are_cut(tmp_path, rg):
    from loopagent.tools.workspace import Workspace

    (tmp_path / "min.js").write_text("var a='needle';" + "x" * 5000 + "\n")
    out = grep(ToolContext(Workspace(tmp_path)), rg, pattern="needle")
    assert out == ["min.js:1:var a='needle';" + "x" * 285 + " [... 4715 bytes clipped ...]"]


@pytest.mark.parametrize("rg", IMPLS)
def test_search_errors_the_model_can_act_on(c, rg):
    with pytest.raises(ToolError, match="search failed: .*"):
        grep(c, rg, pattern="def (unclosed")
    with pytest.raises(ToolError, match="nope does not exist"):
        grep(c, rg, pattern="x", path="nope")
    with pytest.raises(ToolError, match="outside the workspace"):
        listing(c, rg, path="..")
    os.mkfifo(c.workspace.root / "pipe")
    with pytest.raises(ToolError, match="pipe is not a regular file or directory"):
        grep(c, rg, pattern="x", path="pipe")


# ---- what the policy and hard links keep out ------------------------------------------------------

@pytest.fixture
def guarded(tmp_path: Path) -> Path:
    """A workspace with a denied .env (also reachable through a link) and a hard link to a file outside."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("token = 'needle public'\n")
    (root / ".env").write_text("API=needle-SECRET-ENV\n")
    (root / "src" / "env-link").symlink_to("../.env")
    (tmp_path / "canary.txt").write_text("needle-SECRET-CANARY\n")
    os.link(tmp_path / "canary.txt", root / "src" / "notes.txt")
    return root


def guarded_ctx(root: Path, allows=lambda tool, rel: False) -> ToolContext:
    from loopagent.tools.workspace import Workspace

    return ToolContext(Workspace(root), may_read=lambda rel: rel != ".env", explicitly_allows=allows)


@pytest.mark.parametrize("rg", IMPLS)
def test_grep_and_list_files_skip_what_the_policy_denies_and_hard_links(guarded, rg):
    c = guarded_ctx(guarded)
    for path in [None, ".", ".env", "src", "src/env-link", "src/notes.txt"]:
        out = "\n".join(grep(c, rg, pattern="needle", path=path))
        assert "SECRET" not in out, (path, out)
    assert grep(c, rg, pattern="needle") == ["src/app.py:1:token = 'needle public'"]
    assert grep(c, rg, pattern="needle", path=".env") == ["no matches for 'needle'"]
    assert ".env" not in listing(c, rg)
    assert listing(c, rg, path=".") == ["src/app.py", "src/notes.txt"]  # a hard link's name is no secret


@pytest.mark.parametrize("rg", IMPLS)
def test_an_explicit_allow_lets_grep_search_a_hard_link(guarded, rg):
    c = guarded_ctx(guarded, allows=lambda tool, rel: (tool, rel) == ("read_file", "src/notes.txt"))
    assert "src/notes.txt:1:needle-SECRET-CANARY" in grep(c, rg, pattern="needle")
