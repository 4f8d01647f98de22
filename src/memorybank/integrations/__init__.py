"""Adapters that plug memorybank into agent frameworks (each behind its own extra)."""
