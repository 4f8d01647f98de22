"""The Claude memory tool (async source; the sync twin is generated)."""
