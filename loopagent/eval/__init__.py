"""`loop eval`: a suite of tasks, each run headless on a fresh copy of its repo, then checked independently."""
