"""Pick the changed Python sources a CI job should check."""
from pathlib import PurePosixPath


def python_sources(changed_paths):
    """Return the .py paths under src/, in POSIX form, in the order given."""
    selected = []
    for name in changed_paths:
        path = PurePosixPath(name)
        if path.parts and path.parts[0] == "src" and path.suffix == ".py":
            selected.append(path.as_posix())
    return selected
