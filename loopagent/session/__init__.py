"""Sessions: every message of a run appended to a JSONL file, loaded back (with repair) to resume."""

from loopagent.session.catalog import SessionError, Summary, find, listing, new_path, workspace_key
from loopagent.session.loader import Loaded, Repair, load
from loopagent.session.writer import SessionWriteError, SessionWriter, header

__all__ = [
    "Loaded", "Repair", "SessionError", "SessionWriteError", "SessionWriter", "Summary", "find", "header",
    "listing", "load", "new_path", "workspace_key",
]
