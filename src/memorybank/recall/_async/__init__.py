"""``memory.search`` and its stages (async source; the sync twins are generated)."""
