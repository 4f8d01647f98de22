"""The shared core, async source (the ``_sync`` twin is generated)."""
