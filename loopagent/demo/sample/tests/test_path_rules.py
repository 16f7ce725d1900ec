from path_rules import python_sources


def test_keeps_python_files_under_src():
    assert python_sources(["src/app.py", "docs/guide.md", "tests/test_app.py"]) == ["src/app.py"]


def test_keeps_nested_packages():
    assert python_sources(["src/api/routes.py"]) == ["src/api/routes.py"]


def test_normalises_windows_separators():
    assert python_sources([r"src\api\routes.py"]) == ["src/api/routes.py"]


def test_no_changes_select_nothing():
    assert python_sources([]) == []
