"""External vector indexes (async source; the sync twins are generated)."""
