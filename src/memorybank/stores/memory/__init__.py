"""The in-memory reference store (``memory://``)."""
