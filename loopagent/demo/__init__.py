"""`loop demo`: a bundled sample repository and a recorded model run that repairs it."""
