"""I/O-free rules written once above every store: validation, scope, windows, idempotency, ids."""
