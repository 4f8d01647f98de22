"""Dumps: the JSON-lines format of ``memorybank export``/``import`` and their I/O."""
