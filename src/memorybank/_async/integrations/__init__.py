"""Framework integrations (async source; the sync twins are generated)."""
