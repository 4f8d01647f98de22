"""Adapters that make memorybank drop-in where agents are built (each one an extra)."""
