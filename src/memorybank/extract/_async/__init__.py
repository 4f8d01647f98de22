"""Memory formation over a store (async source; the sync twins are generated)."""
