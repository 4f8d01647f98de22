"""``AsyncHTTPStore`` (async source; the sync twin is generated)."""

from memorybank.stores.http._async.store import AsyncHTTPStore

__all__ = ["AsyncHTTPStore"]
