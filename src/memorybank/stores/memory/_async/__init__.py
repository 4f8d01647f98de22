"""``AsyncInMemoryStore`` (async source; the sync twin is generated)."""

from memorybank.stores.memory._async.store import AsyncInMemoryStore

__all__ = ["AsyncInMemoryStore"]
