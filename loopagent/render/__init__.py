"""Listeners that show a run: terminal.py for people, jsonl.py for scripts."""
