"""Language-server diagnostics after edits: framing.py (the wire), client.py (one server),
servers.py (which server a file gets), diagnostics.py (what an edit broke), hub.py (the run's
servers). Imported only by a run whose `lsp` setting is on, at its first edit.
"""
