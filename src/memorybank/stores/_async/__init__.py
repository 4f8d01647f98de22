"""Opening a store from its URL (async source; the sync twin is generated)."""
