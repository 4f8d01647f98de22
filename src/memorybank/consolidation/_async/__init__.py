"""``memory.consolidation`` (async source; ``_sync`` is generated from it)."""
